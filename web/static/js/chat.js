/**
 * The embedded chat: the canonical transcript, answers streamed over the websocket, the toolbar
 * choosing exact sources, other notebooks and what answers come from (the documents, or the
 * notebook's notes, where the assistant may also propose edits for the person to approve), and
 * citations that open their evidence. Viewers get the transcript read-only: no composer, no retry.
 */
import { api } from "./api.js";
import { ApprovalList } from "./approvals.js";
import { citationItem, citationLink, openCitationsIn } from "./citations.js";
import { byRole, confirmDialog, h, showError } from "./dom.js";

const MARKER = /\s*\[(ch_[A-Za-z0-9_-]+)\]/g;
const PLACEHOLDER = { notebook: "Ask a question about the sources", knowledge: "Ask your notes, or ask to improve one" };

export class ChatPanel {
  constructor(page) {
    this.page = page;
    this.root = document.getElementById("panel-chat");
    this.transcript = byRole("transcript", this.root);
    this.composer = byRole("composer", this.root);
    this.note = byRole("chat-note", this.root);
    this.messages = [];
    this.chosenSources = new Set();
    this.chosenNotebooks = new Set();
    this.ws = null;
    this.turn = null;
    this.rendered = false;
    this.modeKey = `gnosi.chat-mode.${page.id}`;
    this.approvals = new ApprovalList(page, this.root, () => page.knowledge.refresh());
    this.setupMode();
    this.composer.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send(this.composer.elements.message.value);
    });
    this.composer.elements.message.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.composer.requestSubmit();
      }
    });
    openCitationsIn(this.transcript, byRole("viewer-dialog"));
    this.root.querySelector('[data-action="clear-conversation"]').addEventListener("click", () => this.clear());
    window.addEventListener("pagehide", () => this.ws?.close());
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}`;
  }

  get streaming() {
    return this.turn !== null;
  }

  async load() {
    await Promise.all([this.loadSources(), this.loadTranscript(), this.approvals.load()]);
  }

  get mode() {
    return byRole("chat-mode", this.root).querySelector("input:checked").value;
  }

  /** The answer mode chosen last in this notebook, kept in this browser. */
  setupMode() {
    const switcher = byRole("chat-mode", this.root);
    const kept = localStorage.getItem(this.modeKey);
    const input = switcher.querySelector(`input[value="${kept}"]`);
    if (input) input.checked = true;
    const apply = () => {
      this.composer.elements.message.placeholder = PLACEHOLDER[this.mode];
      localStorage.setItem(this.modeKey, this.mode);
    };
    switcher.addEventListener("change", apply);
    apply();
  }

  /** Re-read the transcript (the shared mode's collaborative poll) unless an answer streams. */
  async loadTranscript() {
    const conversation = await api(`${this.base}/conversation`);
    if (this.streaming) return;
    this.conversation = conversation;
    const signature = (messages) => `${messages.length}:${messages.at(-1)?.id ?? ""}`;
    if (!this.rendered || signature(this.messages) !== signature(conversation.messages)) {
      this.messages = conversation.messages;
      this.renderTranscript();
      this.rendered = true;
    }
    this.renderComposer();
  }

  /** The toolbar's choices: this notebook's available sources and other notebooks. */
  async loadSources() {
    const data = await api(`${this.base}/chat-sources`);
    const available = new Set(data.sources.map((source) => source.id));
    this.chosenSources = new Set([...this.chosenSources].filter((id) => available.has(id)));
    byRole("source-choices", this.root).replaceChildren(
      ...data.sources.map((source) =>
        this.choice(source.id, `${source.label} (${source.kind})`, this.chosenSources)),
    );
    if (!data.sources.length) byRole("source-choices", this.root).append(h("li", { class: "muted" }, "No source is available yet."));
    byRole("notebook-choices", this.root).replaceChildren(
      ...data.notebooks.map((notebook) => this.choice(notebook.id, notebook.title, this.chosenNotebooks)),
    );
    if (!data.notebooks.length) byRole("notebook-choices", this.root).append(h("li", { class: "muted" }, "No other notebook to attach."));
    this.sourceCount = data.sources.length;
    this.maxNotebooks = data.max_notebooks;
    this.summarizeChoices();
  }

  choice(id, label, chosen) {
    const box = h("input", { type: "checkbox", value: id, checked: chosen.has(id) });
    box.addEventListener("change", () => {
      if (box.checked) chosen.add(id);
      else chosen.delete(id);
      this.summarizeChoices();
    });
    return h("li", {}, h("label", { class: "check-row" }, box, h("span", {}, label)));
  }

  summarizeChoices() {
    byRole("source-picker-summary", this.root).textContent = this.chosenSources.size
      ? `${this.chosenSources.size} of ${this.sourceCount}`
      : "all";
    const full = this.chosenNotebooks.size >= this.maxNotebooks;
    byRole("notebook-picker-summary", this.root).textContent = this.chosenNotebooks.size
      ? `${this.chosenNotebooks.size} attached${full ? " (the most a question can use)" : ""}`
      : "none";
    for (const box of byRole("notebook-choices", this.root).querySelectorAll("input")) box.disabled = full && !box.checked;
  }

  /** Composer, toolbar and notes for what this user may do now. */
  renderComposer() {
    const conversation = this.conversation;
    if (!conversation) return;
    const readOnly = conversation.read_only;
    const blocked = !this.page.detail.active_revision;
    this.root.dataset.readOnly = String(readOnly);
    if (readOnly && this.composer.isConnected) this.composer.remove();
    byRole("chat-toolbar", this.root).hidden = readOnly;
    this.root.querySelector('[data-action="clear-conversation"]').hidden = readOnly || !conversation.can_clear || !this.messages.length;
    let note = "";
    if (readOnly) note = "Read-only transcript: viewers can read this conversation but not ask, retry, edit or rewind.";
    else if (blocked) note = "Chat opens once at least one source is indexed.";
    else if (conversation.mode === "shared") note = "Shared transcript: every member sees these messages.";
    this.note.hidden = !note;
    this.note.textContent = note;
    if (!readOnly) {
      this.composer.hidden = false;
      const disabled = blocked || this.streaming;
      this.composer.querySelector('button[type="submit"]').disabled = disabled;
      this.composer.elements.message.disabled = blocked;
    }
  }

  renderTranscript() {
    this.transcript.replaceChildren(...this.messages.map((message) => this.renderMessage(message)));
    if (!this.messages.length) {
      this.transcript.append(h("li", { class: "muted empty" }, "No messages yet."));
    }
    this.transcript.lastElementChild?.scrollIntoView({ block: "end" });
  }

  authorName(message) {
    if (message.role !== "user") return "Notebook";
    if (!message.author || message.author.id === this.page.session.user.id) return "You";
    return message.author.name || "A member";
  }

  renderMessage(message) {
    const item = h("li", { class: `msg msg-${message.role}`, "data-message-id": message.id || "" },
      h("p", { class: "msg-author" }, this.authorName(message)));
    if (message.role === "user") {
      item.append(h("p", { class: "msg-text" }, message.text));
    } else {
      this.fillAnswer(item, message);
    }
    return item;
  }

  /** Answer text with `[chunk_id]` markers as numbered links, then the list of citations. */
  fillAnswer(item, message) {
    const citations = message.citations || [];
    const numbers = new Map(citations.map((citation, index) => [citation.chunk_id, index]));
    const body = h("div", { class: "msg-text" });
    for (const paragraph of message.text.split(/\n{2,}/)) {
      const p = h("p");
      let at = 0;
      for (const match of paragraph.matchAll(MARKER)) {
        p.append(paragraph.slice(at, match.index));
        at = match.index + match[0].length;
        const index = numbers.get(match[1]);
        if (index !== undefined) p.append(" ", citationLink(citations[index], index + 1, `[${index + 1}]`));
      }
      p.append(paragraph.slice(at));
      body.append(p);
    }
    item.classList.toggle("msg-no-evidence", message.status === "no_evidence");
    item.append(body);
    if (citations.length) {
      item.append(
        h("ol", { class: "citations", "aria-label": "Citations" }, ...citations.map((citation, index) => citationItem(citation, index + 1))),
      );
    }
    const related = message.status === "no_evidence" ? message.related || [] : [];
    if (related.length) {
      item.append(
        h("p", { class: "related-note muted" }, "Related, but they do not answer this:"),
        h("ul", { class: "citations related", "aria-label": "Related passages" }, ...related.map((passage, index) =>
          citationItem(passage, index + 1, { kind: "Related passage", quote: false }))),
      );
    }
  }

  async clear() {
    const shared = this.conversation.mode === "shared";
    const question = shared ? "Clear the shared transcript for every member?" : "Clear your conversation?";
    if (!(await confirmDialog(byRole("confirm-dialog"), question))) return;
    try {
      await api(`${this.base}/conversation`, { method: "DELETE" });
      this.rendered = false;
      await this.loadTranscript();
    } catch (error) {
      showError(this.note, error);
    }
  }

  /** One websocket per page, opened on the first question; the session cookie signs it in. */
  connect() {
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return this.wsReady;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/api/chat/ws`);
    this.ws = ws;
    this.wsReady = new Promise((resolve, reject) => {
      ws.addEventListener("open", resolve, { once: true });
      ws.addEventListener("error", () => reject(new Error("The chat connection failed.")), { once: true });
    });
    ws.addEventListener("message", (event) => this.onEvent(JSON.parse(event.data)));
    ws.addEventListener("close", () => {
      if (this.ws === ws) this.ws = null;
      this.turn?.fail({ message: "The connection closed before the answer was complete." });
    });
    return this.wsReady;
  }

  async send(text) {
    const message = text.trim();
    if (!message || this.streaming) return;
    this.composer.elements.message.value = "";
    this.transcript.querySelector(".empty")?.remove();
    const question = { id: null, role: "user", author: null, text: message };
    this.transcript.append(this.renderMessage(question));
    const turn = new StreamingTurn(this, message);
    this.turn = turn;
    this.transcript.append(turn.item);
    turn.item.scrollIntoView({ block: "end" });
    this.renderComposer();
    try {
      await this.connect();
      this.ws.send(JSON.stringify({
        type: "turn",
        notebook_id: this.page.id,
        message,
        notebook_ids: [...this.chosenNotebooks],
        source_ids: [...this.chosenSources],
        mode: this.mode,
      }));
    } catch (error) {
      turn.fail(error);
    }
  }

  onEvent({ event, data }) {
    if (event === "auth" || !this.turn) return;
    if (event === "token") this.turn.token(data.text);
    else if (event === "tool") this.turn.tool(data);
    else if (event === "approval") this.turn.approval(data);
    else if (event === "done") this.turn.done(data);
    else if (event === "error") this.turn.fail(data);
  }

  /** Called by the turn when it ends, either way. */
  finished(question, answer, approvals = []) {
    this.turn = null;
    if (answer) this.messages = [...this.messages, question, answer];
    if (approvals.length) this.approvals.load().catch((error) => showError(this.note, error));
    this.renderComposer();
    this.composer.elements.message?.focus();
  }
}

/** The answer being streamed: a live region that screen readers read once it is complete. */
class StreamingTurn {
  constructor(chat, message) {
    this.chat = chat;
    this.message = message;
    this.text = "";
    this.status = h("p", { class: "msg-status muted" }, "Searching the sources…");
    this.body = h("p", { class: "msg-text" });
    this.item = h("li", { class: "msg msg-assistant streaming", "aria-live": "polite", "aria-busy": "true" },
      h("p", { class: "msg-author" }, "Notebook"), this.status, this.body);
  }

  token(text) {
    this.text += text;
    this.body.textContent = this.text.replace(MARKER, "");
  }

  tool(data) {
    if (data.state === "running") {
      this.status.textContent = "Searching the sources…";
      return;
    }
    const count = data.result_count;
    const what = data.name === "search_knowledge" ? "notes" : "sources";
    this.status.textContent = `Searched the ${what}: ${count} ${what === "notes" ? "hit" : "passage"}${count === 1 ? "" : "s"} found.`;
  }

  approval(data) {
    this.status.textContent = `Proposed an edit of “${data.note_title || "a note"}”: it waits for your approval below.`;
  }

  done(data) {
    if (this.ended) return;
    this.ended = true;
    const answer = {
      id: data.message_id, role: "assistant", author: null, text: data.text, status: data.status,
      citations: data.citations, related: data.related,
    };
    this.item.replaceChildren(h("p", { class: "msg-author" }, "Notebook"));
    this.item.classList.remove("streaming");
    this.chat.fillAnswer(this.item, answer);
    this.item.dataset.messageId = data.message_id;
    this.item.setAttribute("aria-busy", "false");
    if (data.approvals?.length) {
      this.item.append(h("p", { class: "muted", "data-role": "turn-approvals" },
        `${data.approvals.length} proposed edit${data.approvals.length === 1 ? "" : "s"} wait${data.approvals.length === 1 ? "s" : ""} for your approval below the conversation.`));
    }
    this.chat.finished({ id: null, role: "user", author: null, text: this.message }, answer, data.approvals || []);
  }

  fail(error) {
    if (this.ended) return;
    this.ended = true;
    this.status.textContent = "";
    this.item.classList.remove("streaming");
    this.item.classList.add("msg-error");
    this.body.textContent = `No answer: ${error.message || error.code || "the turn failed."}`;
    const retry = h("button", { type: "button", onclick: () => {
      this.item.previousElementSibling?.remove();
      this.item.remove();
      this.chat.send(this.message);
    } }, "Retry");
    this.item.append(retry);
    this.item.setAttribute("aria-busy", "false");
    this.chat.finished(null, null);
  }
}
