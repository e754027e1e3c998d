/**
 * The sources panel: per-resource state, last successful check, bounded error reasons, progress
 * of the running job (naming the resource in work), and the creator's management controls.
 */
import { api, withQuery } from "./api.js";
import { byRole, confirmDialog, formatDate, h, renderPager, showError } from "./dom.js";
import { STATE_LABEL, formatTime, jobActive, transcriptNote } from "./format.js";
import { ResourceSelector } from "./selector.js";

const PER_PAGE = 20;
const MAX_REASON = 300;
const LINKED_PREFIX = "linked:";

function bounded(text) {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 1)}…` : text;
}

function reasonOf(error) {
  if (!error) return "";
  return bounded(typeof error === "string" ? error : error.message || error.code || "");
}

/** A recording's length and what wrote its transcript (a speech model or the site's subtitles). */
function recordingNote(source) {
  return `Recording, ${formatTime(source.duration_seconds)}${transcriptNote(source.transcribed_by)}`;
}

function resourceTitle(item) {
  return item.title || item.sources?.find((source) => source.title)?.title || item.resource_id;
}

export class SourcesPanel {
  constructor(page) {
    this.page = page;
    this.root = document.getElementById("panel-sources");
    this.pageNumber = 1;
    this.titles = new Map();
    this.addDialog = byRole("add-dialog");
    this.selector = null;
    this.action("refresh").addEventListener("click", () => this.refresh());
    this.action("add-sources").addEventListener("click", () => this.openAdd());
    this.action("cancel").addEventListener("click", () => this.cancel());
    this.addDialog.querySelector('[data-action="close"]').addEventListener("click", () => this.addDialog.close());
    byRole("add-form", this.addDialog).addEventListener("submit", (event) => this.submitAdd(event));
  }

  action(name) {
    return this.root.querySelector(`[data-action="${name}"]`);
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}`;
  }

  async load(pageNumber = this.pageNumber) {
    this.pageNumber = pageNumber;
    const data = await api(withQuery(`${this.base}/sources`, { page: pageNumber, per_page: PER_PAGE }));
    for (const item of data.items) this.titles.set(item.resource_id, resourceTitle(item));
    byRole("source-total", this.root).textContent = `(${data.total})`;
    const list = byRole("source-items", this.root);
    list.replaceChildren(...data.items.map((item) => this.renderItem(item)));
    if (!data.items.length) list.append(h("li", { class: "muted" }, "No sources yet."));
    renderPager(byRole("sources-pager", this.root), {
      page: data.page,
      perPage: data.per_page,
      total: data.total,
      onPage: (page) => this.load(page),
    });
    this.renderProgress();
  }

  renderItem(item) {
    const detail = this.page.detail;
    const title = resourceTitle(item);
    const reason = reasonOf(item.error);
    const failedSources = (item.sources || []).filter((source) => source.error);
    const children = [
      h("div", { class: "source-head" },
        h("span", { class: "source-title" }, title),
        h("span", { class: `state state-${item.state}` }, STATE_LABEL[item.state] ?? item.state)),
      h("p", { class: "muted" }, `Last successful check: ${formatDate(item.last_checked_at)}`),
      ...(item.sources || []).filter((source) => source.duration_seconds != null).map((source) =>
        h("p", { class: "muted", "data-role": "recording" }, recordingNote(source))),
      reason ? h("p", { class: "source-error" }, reason) : null,
      item.retry_at
        ? h("p", { class: "muted", "data-role": "retry-at" },
          `Failed ${item.failures} time${item.failures === 1 ? "" : "s"} in a row; ` +
          `next automatic try after ${formatDate(item.retry_at)}.`)
        : null,
    ];
    if (failedSources.length && (item.sources.length > 1 || !reason)) {
      children.push(
        h("ul", { class: "source-parts" }, ...failedSources.map((source) =>
          h("li", {}, `${source.kind}: ${source.title || source.value || source.id} · `,
            h("span", { class: "source-error" }, reasonOf(source.error))))),
      );
    }
    if (detail.is_owner) {
      const busy = jobActive(detail.job);
      children.push(
        h("div", { class: "source-actions" },
          h("button", {
            type: "button",
            disabled: busy,
            title: busy ? "Wait until the running ingestion ends." : null,
            "aria-label": `Retry ${title}`,
            onclick: () => this.retry(item.resource_id),
          }, "Retry"),
          // A linked folder's document leaves with its file, or when the folder is unlinked.
          item.resource_id.startsWith(LINKED_PREFIX) ? null : h("button", {
            type: "button",
            class: "danger",
            "aria-label": `Remove ${title}`,
            onclick: () => this.remove(item.resource_id, title),
          }, "Remove")),
      );
    }
    return h("li", { class: "source-item", "data-resource-id": item.resource_id, "data-state": item.state }, ...children);
  }

  /** Progress of the running job, the creator's Cancel, and how the last one ended. */
  renderProgress() {
    const { job, is_owner: owner } = this.page.detail;
    const box = byRole("progress", this.root);
    const note = byRole("job-note", this.root);
    const active = jobActive(job);
    box.hidden = !active;
    this.action("cancel").hidden = !(active && owner && job.state !== "cancelling");
    if (active) {
      const bar = byRole("progress-bar", this.root);
      bar.max = Math.max(1, job.total || 1);
      bar.value = job.done || 0;
      const current = job.current_resource_id
        ? ` · now: ${this.titles.get(job.current_resource_id) || job.current_resource_id}${job.activity ? ` (${job.activity})` : ""}`
        : "";
      const verb = { queued: "Queued", cancelling: "Cancelling", running: "Indexing" }[job.state];
      const counts = job.total ? ` ${job.done} of ${job.total}` : job.state === "running" ? ": checking sources" : "";
      byRole("progress-text", this.root).textContent = `${verb}${counts}${current}`;
    }
    const ended = job && !active && ["failed", "cancelled"].includes(job.state);
    note.hidden = !ended && !this.notice;
    note.classList.toggle("banner-error", Boolean(ended));
    note.textContent = ended
      ? `The last ingestion ${job.state === "failed" ? "failed" : "was cancelled"}${job.error ? `: ${reasonOf(job.error)}` : "."}` +
        (this.page.detail.active_revision ? " The previous index stays in use." : " Chat stays blocked until a refresh succeeds.")
      : this.notice || "";
  }

  /** A one-off message under the progress box (outcome of the creator's last action). */
  say(text) {
    this.notice = text;
    this.renderProgress();
  }

  async run(request, success) {
    try {
      const result = await request();
      this.say(success(result));
    } catch (error) {
      this.say(error.message);
    }
    await this.page.poll();
  }

  refresh() {
    return this.run(
      () => api(`${this.base}/refresh`, { method: "POST" }),
      (result) => ({
        queued: "Refresh queued.",
        coalesced: "A refresh is already running; it will run again afterwards.",
      })[result.ingest] || "Nothing changed since the last check.",
    );
  }

  cancel() {
    return this.run(() => api(`${this.base}/refresh/cancel`, { method: "POST" }), () => "Cancelling…");
  }

  retry(resourceId) {
    return this.run(
      () => api(`${this.base}/sources/${encodeURIComponent(resourceId)}/refresh`, { method: "POST" }),
      () => `Retrying ${this.titles.get(resourceId) || resourceId}.`,
    );
  }

  async remove(resourceId, title) {
    if (!(await confirmDialog(byRole("confirm-dialog"), `Remove “${title}” from this notebook? Its passages stop being used at once.`))) return;
    await this.run(
      () => api(`${this.base}/sources/${encodeURIComponent(resourceId)}`, { method: "DELETE" }),
      () => `Removed ${title}.`,
    );
    await this.load();
  }

  openAdd() {
    this.selector?.destroy();
    const errorBox = byRole("form-error", this.addDialog);
    showError(errorBox, null);
    this.selector = new ResourceSelector(byRole("selector", this.addDialog), { errorBox, notebookId: this.page.id });
    this.selector.load({ page: 1 });
    this.addDialog.showModal();
  }

  async submitAdd(event) {
    event.preventDefault();
    const errorBox = byRole("form-error", this.addDialog);
    const ids = this.selector.ids();
    if (!ids.length) {
      showError(errorBox, new Error("Select at least one resource."));
      return;
    }
    try {
      const result = await api(`${this.base}/sources`, { method: "POST", body: { resource_ids: ids } });
      this.addDialog.close();
      const count = result.added.length;
      this.say(count ? `Added ${count} resource${count === 1 ? "" : "s"}.` : "Those resources are already in the notebook.");
      await this.page.poll();
      await this.load();
    } catch (error) {
      showError(errorBox, error);
    }
  }
}
