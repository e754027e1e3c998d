/**
 * The analyses panel: start a durable analysis of the notebook (a kind, and the reader's own words
 * to steer it), watch its progress live, cancel it, and read its result, each point citing its
 * passages as a chat answer does (the same links open the same viewer). Viewers read the analyses
 * the notebook shows them but start, cancel and delete none.
 *
 * The list is polled every 1.5 s while an analysis of it is queued, running or cancelling; once
 * none is, polling stops (in a shared transcript it goes on every 10 s, to show what others start).
 * A screen reader hears an analysis's state changes (one status region), not every progress tick.
 */
import { api, withQuery } from "./api.js";
import { citationItem, openCitationsIn } from "./citations.js";
import { byRole, confirmDialog, formatDate, h, renderPager, showError } from "./dom.js";
import { Poller } from "./poller.js";

const PER_PAGE = 10;
const ACTIVE_POLL_MS = 1500;
const SHARED_POLL_MS = 10000;
const ACTIVE = ["queued", "running", "cancelling"];
const RUNNING = ["queued", "running"]; // what a cancel may still stop

const KIND_LABEL = {
  summary: "Summary",
  briefing: "Briefing",
  study_guide: "Study guide",
  faq: "FAQ",
  timeline: "Timeline",
  disagreements: "Disagreements",
};

const STATE_LABEL = {
  queued: "Queued",
  running: "Running",
  cancelling: "Cancelling",
  cancelled: "Cancelled",
  succeeded: "Done",
  failed: "Failed",
};

/** What a reader needs to know of an analysis's state, in one line. */
function statusText(analysis) {
  const top = analysis.progress.at(-1);
  switch (analysis.state) {
    case "queued":
      return "Waiting for a worker…";
    case "running":
      if (!top) return "Planning the steps…";
      return top.level === 0
        ? `Reading the sources: ${top.done} of ${top.total} batches`
        : `Combining summaries (round ${top.level}): ${top.done} of ${top.total}`;
    case "cancelling":
      return "Cancelling: it stops before its next step…";
    case "cancelled":
      return `Cancelled${analysis.finished_at ? ` ${formatDate(analysis.finished_at)}` : ""}.`;
    case "failed":
      return `Failed: ${analysis.error?.message || analysis.error?.code || "no reason was recorded."}`;
    default:
      return `Finished ${formatDate(analysis.finished_at)}.`;
  }
}

export class AnalysesPanel {
  constructor(page) {
    this.page = page;
    this.root = document.getElementById("panel-analyses");
    this.form = byRole("analysis-form", this.root);
    this.note = byRole("analysis-note", this.root);
    this.error = byRole("analysis-error", this.root);
    this.list = byRole("analysis-items", this.root);
    this.announcer = byRole("analysis-announce", this.root);
    this.pagerKey = "";
    this.pageNumber = 1;
    this.analyses = [];
    this.entries = new Map(); // analysis id -> {analysis, item, open, shown}
    this.startedHere = new Set(); // opened when they succeed
    this.ticket = 0;
    this.starting = false;
    this.form.elements.kind.replaceChildren(
      ...Object.entries(KIND_LABEL).map(([kind, label]) => h("option", { value: kind }, label)),
    );
    this.form.addEventListener("submit", (event) => this.start(event));
    openCitationsIn(this.list, byRole("viewer-dialog"));
    this.poller = new Poller(() => this.load().catch((error) => {
      showError(this.error, error); // the list shown is from before: say so (the next read clears it)
      throw error;
    }), () => this.interval());
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}/analyses`;
  }

  interval() {
    if (this.analyses.some((analysis) => ACTIVE.includes(analysis.state))) return ACTIVE_POLL_MS;
    return this.page.detail.conversation_mode === "shared" ? SHARED_POLL_MS : null;
  }

  /** Read one page of analyses (the newest first) and show it; polls again while one is active.
   * The page asked for is the page from now on, so a poll sent meanwhile reads it too; a read
   * overtaken by a newer one (a poll, a page change, an action) is dropped. */
  async load(pageNumber = this.pageNumber) {
    this.pageNumber = pageNumber;
    const ticket = ++this.ticket;
    const data = await api(withQuery(this.base, { page: pageNumber, per_page: PER_PAGE }));
    if (ticket !== this.ticket) return;
    const last = Math.max(1, Math.ceil(data.total / data.per_page));
    if (!data.items.length && data.page > last) return this.load(last); // its last items were deleted
    showError(this.error, null);
    this.analyses = data.items;
    this.canStart = data.can_start;
    byRole("analysis-total", this.root).textContent = `(${data.total})`;
    this.renderList();
    const pagerKey = `${data.page}/${last}`;
    if (pagerKey !== this.pagerKey) { // redrawn only when it changes: a focused "Next" stays
      this.pagerKey = pagerKey;
      renderPager(byRole("analyses-pager", this.root), {
        page: data.page,
        perPage: data.per_page,
        total: data.total,
        onPage: (page) => {
          this.poller.cancel();
          this.load(page).catch((error) => showError(this.error, error));
        },
      });
    }
    this.renderForm();
    this.poller.schedule();
  }

  /** Read the list again after an action, saying so if that read fails (the action itself did not). */
  async reload(pageNumber = this.pageNumber) {
    this.poller.cancel();
    try {
      await this.load(pageNumber);
    } catch (error) {
      showError(this.error, error);
      this.poller.schedule();
    }
  }

  /** The form, or the note saying why there is none, for what this user may do now (the server
   * says whether they may start one: `can_start` of each list it sends). */
  renderForm() {
    if (this.canStart === undefined) return; // no list read yet
    const detail = this.page.detail;
    const blocked = !detail.active_revision;
    this.form.hidden = !this.canStart;
    let note = "";
    if (!this.canStart) note = "Viewers can read these analyses but not start, cancel or delete one.";
    else if (blocked) note = "Analyses open once at least one source is indexed.";
    else if (detail.conversation_mode === "private" && !detail.is_owner) note = "Only you and the notebook's creator see your analyses.";
    this.note.hidden = !note;
    this.note.textContent = note;
    this.form.querySelector('button[type="submit"]').disabled = !this.canStart || blocked || this.starting;
  }

  /** Keep the items already shown where they are (their open results and focus): drop the ones
   * gone and insert the new ones in place, so no node that holds focus is moved. */
  renderList() {
    const seen = new Set();
    const items = this.analyses.map((analysis) => {
      seen.add(analysis.id);
      let entry = this.entries.get(analysis.id);
      if (!entry) {
        entry = { analysis, item: null, open: false, shown: false };
        this.entries.set(analysis.id, entry);
      }
      this.renderItem(entry, analysis);
      return entry.item;
    });
    for (const id of [...this.entries.keys()]) if (!seen.has(id)) this.entries.delete(id);
    if (!items.length) {
      this.list.replaceChildren(h("li", { class: "muted empty" }, "No analyses yet."));
      return;
    }
    const wanted = new Set(items);
    for (const node of [...this.list.children]) if (!wanted.has(node)) node.remove();
    items.forEach((item, index) => {
      if (this.list.children[index] !== item) this.list.insertBefore(item, this.list.children[index] ?? null);
    });
  }

  /** Build the item once; later calls change only the parts whose analysis changed. */
  renderItem(entry, analysis) {
    const before = entry.item ? entry.analysis : null;
    entry.analysis = analysis;
    if (!entry.item) {
      const resultId = `analysis-result-${analysis.id}`;
      entry.item = h("li", { class: "analysis", "data-analysis-id": analysis.id, tabindex: "-1" },
        h("div", { class: "analysis-head" },
          h("span", { class: "analysis-kind" }, KIND_LABEL[analysis.kind] || analysis.kind),
          h("span", { class: "state", "data-role": "analysis-state" })),
        analysis.instruction ? h("p", { class: "analysis-instruction" }, `“${analysis.instruction}”`) : null,
        h("p", { class: "muted analysis-meta" },
          `Started ${formatDate(analysis.created_at)}${analysis.requested_by === this.page.session.user.id ? " by you" : ""}`),
        h("div", { class: "analysis-status", "data-role": "analysis-status" }),
        h("div", { class: "analysis-actions", "data-role": "analysis-actions" }),
        h("div", { class: "analysis-result", id: resultId, "data-role": "analysis-result", hidden: true }));
      if (this.startedHere.has(analysis.id)) entry.open = true;
    }
    const item = entry.item;
    item.dataset.state = analysis.state;
    const state = byRole("analysis-state", item);
    state.className = `state state-${analysis.state}`;
    state.textContent = STATE_LABEL[analysis.state] || analysis.state;
    const status = statusText(analysis);
    const statusBox = byRole("analysis-status", item);
    if (statusBox.dataset.text !== status) {
      statusBox.dataset.text = status;
      const top = analysis.progress.at(-1);
      statusBox.replaceChildren(h("p", { class: analysis.state === "failed" ? "source-error" : "muted" }, status));
      if (RUNNING.includes(analysis.state)) {
        statusBox.append(h("progress", {
          max: top?.total ?? 1, value: analysis.state === "running" && top ? top.done : null,
          "aria-label": `${this.name(analysis)}: progress`, "aria-valuetext": status,
        }));
      }
    }
    if (before && before.state !== analysis.state) this.announcer.textContent = `${this.name(analysis)}: ${status}`;
    if (!before || before.state !== analysis.state || before.can_manage !== analysis.can_manage) this.renderActions(entry);
    if (analysis.state === "succeeded" && entry.open && !entry.shown) this.showResult(entry);
  }

  /** How buttons and announcements name an analysis: its kind and when it started. */
  name(analysis) {
    return `${KIND_LABEL[analysis.kind] || analysis.kind} started ${formatDate(analysis.created_at)}`;
  }

  /** The item's buttons for its state; focus on one that goes moves to the item's first button. */
  renderActions(entry) {
    const { analysis, item } = entry;
    const kind = (KIND_LABEL[analysis.kind] || analysis.kind).toLowerCase();
    const name = this.name(analysis);
    const box = byRole("analysis-actions", item);
    const hadFocus = box.contains(document.activeElement);
    const actions = [];
    if (analysis.state === "succeeded") {
      actions.push(h("button", {
        type: "button",
        "data-action": "toggle-result",
        "aria-expanded": String(entry.open),
        "aria-controls": `analysis-result-${analysis.id}`,
        title: name,
        onclick: () => this.toggleResult(entry),
      }, entry.open ? "Hide result" : "Show result"));
    }
    if (analysis.can_manage && RUNNING.includes(analysis.state)) {
      actions.push(h("button", {
        type: "button", class: "danger", "data-action": "cancel-analysis", title: `Cancel the ${name.toLowerCase()}`, onclick: () => this.cancel(entry),
      }, "Cancel"));
    }
    if (analysis.can_manage && !ACTIVE.includes(analysis.state)) {
      actions.push(h("button", {
        type: "button", class: "link-button", "data-action": "delete-analysis", "aria-label": `Delete this ${kind}`, title: `Delete the ${name.toLowerCase()}`,
        onclick: () => this.remove(entry),
      }, "Delete"));
    }
    box.replaceChildren(...actions);
    if (hadFocus) (actions[0] ?? item).focus();
  }

  async toggleResult(entry) {
    entry.open = !entry.open;
    const button = entry.item.querySelector('[data-action="toggle-result"]');
    button.setAttribute("aria-expanded", String(entry.open));
    button.textContent = entry.open ? "Hide result" : "Show result";
    if (entry.open) await this.showResult(entry);
    else byRole("analysis-result", entry.item).hidden = true;
  }

  /** Read the analysis with its result and show its points (a timeline comes in date order). */
  async showResult(entry) {
    entry.shown = true;
    const box = byRole("analysis-result", entry.item);
    box.hidden = false;
    box.setAttribute("aria-busy", "true");
    box.replaceChildren(h("p", { class: "muted" }, "Loading the result…"));
    try {
      const analysis = await api(`${this.base}/${encodeURIComponent(entry.analysis.id)}`);
      const points = analysis.result?.points ?? [];
      const kind = KIND_LABEL[analysis.kind] || analysis.kind;
      box.replaceChildren(points.length
        ? h("ol", { class: "analysis-points", "aria-label": `${kind}: points` }, ...points.map((point) => this.renderPoint(point)))
        : h("p", { class: "muted" }, "The sources gave no point to report."));
    } catch (error) {
      entry.shown = false;
      box.replaceChildren(h("p", { class: "form-error" }, error.message));
      if (error.status === 404) await this.reload(); // deleted meanwhile, by its starter or an owner
    } finally {
      box.setAttribute("aria-busy", "false");
    }
    if (!entry.open) box.hidden = true; // closed while it loaded
  }

  renderPoint(point) {
    return h("li", { class: `analysis-point${point.removed ? " point-removed" : ""}` },
      h("p", { class: "point-text" }, point.text),
      point.removed ? h("p", { class: "point-removed-note" }, "Based on a removed source: its evidence is no longer in this notebook.") : null,
      point.citations.length
        ? h("ol", { class: "citations", "aria-label": "Citations" }, ...point.citations.map((citation, index) =>
          citationItem(citation, index + 1, { quote: citation.quote !== point.text })))
        : null);
  }

  async start(event) {
    event.preventDefault();
    const data = new FormData(this.form);
    const instruction = String(data.get("instruction") || "").trim();
    const body = { kind: data.get("kind") };
    if (instruction) body.instruction = instruction;
    showError(this.error, null);
    this.starting = true;
    this.renderForm();
    let analysis = null;
    try {
      analysis = await api(this.base, { method: "POST", body });
    } catch (error) {
      showError(this.error, error);
    }
    this.starting = false;
    if (analysis) {
      this.startedHere.add(analysis.id);
      this.form.elements.instruction.value = "";
      await this.reload(1);
    }
    this.renderForm();
  }

  async cancel(entry) {
    showError(this.error, null);
    this.ticket++; // a list read already on its way shows the state before the cancel: drop it
    try {
      const analysis = await api(`${this.base}/${encodeURIComponent(entry.analysis.id)}/cancel`, { method: "POST" });
      this.analyses = this.analyses.map((shown) => (shown.id === analysis.id ? analysis : shown));
      this.renderItem(entry, analysis);
      this.poller.schedule();
    } catch (error) {
      showError(this.error, error);
      if (error.status === 404) await this.reload();
    }
  }

  async remove(entry) {
    const kind = (KIND_LABEL[entry.analysis.kind] || entry.analysis.kind).toLowerCase();
    if (!(await confirmDialog(byRole("confirm-dialog"), `Delete this ${kind}? This cannot be undone.`))) return;
    showError(this.error, null);
    this.ticket++;
    try {
      await api(`${this.base}/${encodeURIComponent(entry.analysis.id)}`, { method: "DELETE" });
    } catch (error) {
      if (error.status !== 404) { // gone already is what was asked
        showError(this.error, error);
        return;
      }
    }
    this.announcer.textContent = `${this.name(entry.analysis)}: deleted.`;
    await this.reload();
    (this.list.querySelector("li.analysis button") ?? this.form.querySelector("button"))?.focus();
  }
}
