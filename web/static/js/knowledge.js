/**
 * The Knowledge panel: the notebook's PDFs made into source notes (each job's stage and units
 * while it runs, its coverage notes after), a source note's table of contents, a note read beside
 * it whose every claim opens its page in the evidence viewer with the quoted passage marked, and
 * the concepts the sources feed, with the source of each point, and the recent changes they
 * followed (what each did, and what it found for a person to review). Polls only while a job or a
 * change is under way.
 */
import { api, withQuery } from "./api.js";
import { showInViewer } from "./citations.js";
import { byRole, h, showError } from "./dom.js";
import { showEvidence } from "./viewer.js";
import { Poller } from "./poller.js";

const ACTIVE = ["queued", "running", "cancelling"];
const EVENTS_SHOWN = 8;
// Wide enough for the page beside the note: a claim opens its page there, else in the dialog.
const BESIDE = window.matchMedia("(min-width: 72rem)");
const EVENT_LABEL = {
  note_published: "Source note published", note_edited: "Note edited", note_deleted: "Note deleted",
  source_deleted: "Source deleted", source_restored: "Source restored", source_replaced: "New version of a source",
};
const POLL_MS = 1500;
// Sources and concepts listed at once: the API's largest page; past it the list says how many more.
const LISTED = 200;
const JOB_LABEL = {
  queued: "queued", running: "working", cancelling: "cancelling", cancelled: "cancelled", failed: "failed",
  completed: "ready", completed_with_warnings: "ready, with coverage notes",
};
const STAGE_LABEL = { parse: "reading the pages", plan: "planning its notes", write: "writing notes", check: "checking notes", publish: "publishing" };

/** A last list item saying how many of ``total`` are not shown, or none. */
function moreThanShown(shown, total, what) {
  return total > shown ? [h("li", { class: "muted" }, `The first ${shown} of ${total} ${what} are shown.`)] : [];
}

function pageLabel(locator) {
  const printed = locator.page_label && locator.page_label !== String(locator.page) ? ` (printed ${locator.page_label})` : "";
  return `p. ${locator.page}${printed}`;
}

export class KnowledgePanel {
  constructor(page) {
    this.page = page;
    this.root = document.getElementById("panel-knowledge");
    this.form = byRole("knowledge-form", this.root);
    this.error = byRole("knowledge-error", this.root);
    this.announcer = byRole("knowledge-announce", this.root);
    this.list = byRole("knowledge-sources", this.root);
    this.conceptList = byRole("knowledge-concepts", this.root);
    this.eventList = byRole("knowledge-events", this.root);
    this.events = [];
    this.reader = byRole("knowledge-reader", this.root);
    this.dialog = byRole("viewer-dialog");
    this.layout = this.root.querySelector(".knowledge-layout");
    this.viewerPane = byRole("knowledge-viewer", this.root);
    this.viewerPane.querySelector('[data-action="close-viewer"]').addEventListener("click", () => this.closeViewer());
    this.sources = [];
    this.form.addEventListener("submit", (event) => this.add(event));
    this.poller = new Poller(() => this.load(), () => (this.sources.some((s) => ACTIVE.includes(s.active_version?.job?.state))
      || this.events.some((e) => ACTIVE.includes(e.state)) ? POLL_MS : null));
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}/knowledge`;
  }

  /** The source notes and concepts; the PDFs that may be added (for those who may write). */
  async load() {
    const [sources, concepts, events] = await Promise.all([api(withQuery(`${this.base}/sources`, { per_page: LISTED })),
      api(withQuery(`${this.base}/concepts`, { per_page: LISTED })), api(withQuery(`${this.base}/events`, { per_page: EVENTS_SHOWN }))]);
    const finished = this.sources.filter((s) => ACTIVE.includes(s.active_version?.job?.state))
      .map((s) => sources.items.find((now) => now.id === s.id))
      .filter((now) => now && !ACTIVE.includes(now.active_version?.job?.state));
    this.sources = sources.items;
    this.sourcesTotal = sources.total;
    if (sources.can_write !== this.canWrite) {
      this.canWrite = sources.can_write;
      await this.loadCandidates();
    }
    showError(this.error, null);
    this.renderSources();
    this.renderConcepts(concepts.items, concepts.total);
    this.events = events.items;
    this.renderEvents();
    for (const source of finished) this.announcer.textContent = `${source.label}: ${JOB_LABEL[source.active_version.job.state]}.`;
    this.poller.schedule();
  }

  /** The notebook's extracted PDFs, for the form (shown only to those who may write). */
  async loadCandidates() {
    this.form.hidden = true;
    if (!this.canWrite) return;
    const data = await api(withQuery(`/api/notebooks/${encodeURIComponent(this.page.id)}/sources`, { per_page: 200 }));
    const pdfs = data.items.filter((item) => item.sources?.some((source) => source.page_count && source.state === "available"));
    const select = this.form.elements.resource_id;
    select.replaceChildren(...pdfs.map((item) => h("option", { value: item.resource_id }, item.title || item.resource_id)));
    this.form.hidden = !pdfs.length;
  }

  async add(event) {
    event.preventDefault();
    const button = this.form.querySelector("button");
    button.disabled = true;
    try {
      const added = await api(`${this.base}/sources`, { method: "POST", body: { resource_id: this.form.elements.resource_id.value } });
      this.announcer.textContent = added.duplicate ? `${added.source.label} is a source note already.` : `Making the source note of ${added.source.label}…`;
      await this.load();
    } catch (error) {
      showError(this.error, error);
    } finally {
      button.disabled = false;
    }
  }

  renderSources() {
    this.list.replaceChildren(...(this.sources.length ? this.sources.map((source) => this.sourceItem(source))
      : [h("li", { class: "muted" }, "No source note yet.")]), ...moreThanShown(this.sources.length, this.sourcesTotal, "sources"));
  }

  sourceItem(source) {
    const version = source.active_version;
    const job = version?.job;
    const units = job?.units;
    const status = !job ? "" : ACTIVE.includes(job.state)
      ? `${STAGE_LABEL[job.stage] || job.stage}${units?.total ? ` · ${units.checked} of ${units.total} notes` : ""}`
      : `${JOB_LABEL[job.state]}${units?.total ? ` · ${units.passed} of ${units.total} notes` : ""}`;
    const readable = version?.source_note_version_id;
    return h("li", { "data-source-id": source.id, "data-job-state": job?.state || "" },
      readable
        ? h("button", { type: "button", class: "knowledge-open", onclick: () => this.openSourceNote(version.source_note_version_id) }, source.label)
        : h("span", { class: "item-title" }, source.label),
      h("div", { class: `muted state-${job?.state || "none"}`, "data-role": "knowledge-job" }, source.state === "deleted" ? "deleted" : status),
      job?.error ? h("div", { class: "coverage-note" }, job.error.message) : null);
  }

  renderConcepts(concepts, total) {
    const shown = concepts.filter((concept) => concept.state !== "withdrawn");
    this.conceptList.replaceChildren(...(shown.length ? shown.map((concept) => h("li", { "data-state": concept.state },
      concept.state === "suspended"
        ? h("span", { class: "item-title" }, concept.name)
        : h("button", { type: "button", class: "knowledge-open", onclick: () => this.openConcept(concept.id) }, concept.name),
      h("div", { class: "muted" }, concept.state === "suspended"
        ? "suspended: a source it rests on changed, and it waits to be rebuilt"
        : `${concept.modules.length} module${concept.modules.length === 1 ? "" : "s"} · ${concept.source_version_count} sources`),
    )) : [h("li", { class: "muted" }, "Concepts appear when two sources share a subject.")]),
    ...moreThanShown(concepts.length, total, "concepts"));
  }

  /** The latest changes, newest first: what each did to the concepts, or why it failed, and the
   * problems it found (a model's decision flagged for review, a module its judge refused). */
  renderEvents() {
    this.eventList.replaceChildren(...(this.events.length ? this.events.map((event) => {
      const result = event.result || {};
      const changed = Object.values(result.concepts || {}).filter((outcome) => outcome !== "unchanged").length;
      const said = event.state === "failed" ? `failed: ${event.error}` : event.state === "done"
        ? `${changed} concept${changed === 1 ? "" : "s"} changed` : event.state;
      const problems = result.problems || [];
      return h("li", { "data-state": event.state, "data-kind": event.kind },
        h("span", { class: "item-title" }, EVENT_LABEL[event.kind] || event.kind),
        h("div", { class: "muted" }, said),
        ...(problems.length ? [h("details", {}, h("summary", {}, `${problems.length} to review`),
          h("ul", {}, ...problems.map((problem) => h("li", {}, problem))))] : []));
    }) : [h("li", { class: "muted" }, "No change yet.")]));
  }

  async openSourceNote(snapshotId) {
    const note = await this.read(() => api(`${this.base}/source-notes/${encodeURIComponent(snapshotId)}`));
    if (!note) return;
    const job = this.sources.find((s) => s.id === note.source.id)?.active_version?.job;
    this.show(
      h("h3", {}, note.source.label),
      h("p", {}, h("a", { href: note.markdown_url, download: "" }, "Download as Markdown")),
      ...(job?.warnings || []).map((w) => h("p", { class: "coverage-note" }, `Left out: ${w.title} (pages ${w.pages.join("–")}): ${w.problems[0]}`)),
      h("ol", { class: "knowledge-toc", "aria-label": "Contents" }, ...note.toc.map((entry) => h("li", { "data-level": String(Math.min(entry.level, 4)) },
        h("button", { type: "button", onclick: () => this.openNote(entry.note_id, snapshotId) }, entry.title)))),
    );
  }

  /** Read the lists again, and the note shown if one is (after an edit made elsewhere). */
  async refresh() {
    await this.load();
    if (this.shownNote) await this.openNote(...this.shownNote);
  }

  async openNote(noteId, snapshotId) {
    const note = await this.read(() => api(`${this.base}/notes/${encodeURIComponent(noteId)}`));
    if (!note) return;
    const evidenceOf = (claim) => note.evidence.filter((e) => e.claim_key === claim.key);
    this.show(
      h("p", {}, h("button", { type: "button", class: "knowledge-open", onclick: () => this.openSourceNote(snapshotId) }, "‹ Contents")),
      h("h3", {}, note.title),
      h("p", { class: "muted" }, note.summary),
      ...note.blocks.map((block) => this.blockView(note, block)),
      h("h4", {}, "Claims"),
      h("ol", { class: "knowledge-claims", "data-role": "knowledge-claims" }, ...note.claims.map((claim) => h("li", {}, claim.text, " ",
        ...evidenceOf(claim).map((evidence) => h("button", {
          type: "button", class: "cite", "data-page": String(evidence.page),
          "aria-label": `Open ${pageLabel(evidence.locator)} of ${note.title} with this claim's evidence`,
          onclick: () => this.openEvidence(note, evidence),
        }, pageLabel(evidence.locator)))))),
    );
    this.shownNote = [noteId, snapshotId];
  }

  /** A block of the note; those who may write get an Edit button that rewrites it in place. */
  blockView(note, block) {
    const view = h("div", { class: `knowledge-block${block.human_revised ? " revised" : ""}`, "data-block-key": block.key },
      h("p", {}, block.text, block.human_revised ? h("span", { class: "muted" }, " (revised by a person)") : null));
    if (this.canWrite && note.state === "active" && note.version.current) {
      view.append(h("button", { type: "button", class: "link-button", "data-action": "edit-block",
        "aria-label": `Edit this block of ${note.title}`, onclick: () => view.replaceWith(this.blockEditor(note, block, view)) }, "Edit"));
    }
    return view;
  }

  /** The block's text in a form: saving sends the version read, so an edit made meanwhile is refused, not lost. */
  blockEditor(note, block, view) {
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const text = h("textarea", { name: "text", rows: "5", maxlength: "20000", required: true, "aria-label": "Block text" });
    text.value = block.text;
    const form = h("form", { class: "stack knowledge-block-editor", "data-block-key": block.key }, text, error,
      h("div", { class: "row-actions" },
        h("button", { type: "submit", class: "primary" }, "Save"),
        h("button", { type: "button", onclick: () => form.replaceWith(view) }, "Cancel")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      form.querySelector('button[type="submit"]').disabled = true;
      try {
        const edited = await api(`${this.base}/notes/${encodeURIComponent(note.id)}/blocks/${encodeURIComponent(block.key)}`, {
          method: "PATCH", body: { expected_version_id: note.version.id, text: text.value },
        });
        this.announcer.textContent = edited.status === "UNCHANGED" ? "Nothing changed." : `Saved: version ${edited.note.version.number}.`;
        await this.refresh();
      } catch (failure) {
        showError(error, failure.code === "VERSION_CONFLICT"
          ? new Error("The note changed since you opened it: reopen it to see the current text.") : failure);
        form.querySelector('button[type="submit"]').disabled = false;
      }
    });
    queueMicrotask(() => text.focus());
    return form;
  }

  /** The claim's page in the PDF viewer, its quoted passage marked (and its block's box drawn):
   * beside the note on a wide screen, so both are read at once; in the dialog otherwise. */
  openEvidence(note, evidence) {
    const target = { notebookId: this.page.id, quote: evidence.snippet, title: note.title };
    const shown = {
      locator: { ...evidence.locator, ...(evidence.box ? { boxes: [evidence.box] } : {}) },
      text: evidence.snippet, source_id: evidence.source_id, revision_id: evidence.revision_id,
    };
    if (!BESIDE.matches) {
      showInViewer(this.dialog, target, shown);
      return;
    }
    this.viewerPane.hidden = false;
    this.layout.classList.add("with-viewer");
    showEvidence(byRole("viewer", this.viewerPane), target, shown);
  }

  closeViewer() {
    this.viewerPane.hidden = true;
    this.layout.classList.remove("with-viewer");
  }

  async openConcept(conceptId) {
    const concept = await this.read(() => api(`${this.base}/concepts/${encodeURIComponent(conceptId)}`));
    if (!concept) return;
    const modules = concept.modules.filter((module) => module.version);
    this.show(
      h("h3", {}, concept.name),
      ...modules.flatMap((module) => [
        h("h4", {}, module.title),
        h("ol", { class: "knowledge-claims" }, ...module.version.points.map((point) => h("li", {}, point.text, " ",
          ...point.evidence.map((evidence) => h("button", {
            type: "button", class: "cite", "data-page": String(evidence.page),
            onclick: () => this.openEvidence({ title: this.labelOf(evidence.source_version_id) }, evidence),
          }, `${this.labelOf(evidence.source_version_id)}, ${pageLabel({ page: evidence.page, page_label: evidence.page_label })}`))))),
      ]),
    );
  }

  labelOf(sourceVersionId) {
    return this.sources.find((s) => s.active_version?.id === sourceVersionId)?.label || "an earlier version";
  }

  async read(fetch) {
    try {
      return await fetch();
    } catch (error) {
      showError(this.error, error);
      return null;
    }
  }

  show(...children) {
    this.shownNote = null;
    this.reader.replaceChildren(...children);
    this.reader.focus({ preventScroll: true });
  }
}
