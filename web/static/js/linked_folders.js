/**
 * The linked folders of the sources panel: the drive folders this notebook follows, each with its
 * drive, schedule, last sync (and why it was skipped), its documents and how many of them are
 * searchable; the creator's "Sync now", schedule choice, unlink and "Link a folder" form. Everyone
 * who can read the notebook sees the list; only its creator gets the controls.
 *
 * After "Sync now" or a new link the round runs on a worker: the panel polls every 1.5 s, for two
 * minutes at most, until each folder it followed has synced again, no document is still indexing
 * and the notebook's ingestion ended, and reloads the sources list as documents come and go.
 * Otherwise it polls every minute only while a folder syncs on a schedule (to show its last sync).
 */
import { api, withQuery } from "./api.js";
import { byRole, confirmDialog, formatDate, h, showError } from "./dom.js";
import { jobActive } from "./format.js";
import { Poller } from "./poller.js";

const FOLLOW_POLL_MS = 1500;
const FOLLOW_FOR_MS = 120000;
const SCHEDULED_POLL_MS = 60000;
const MAX_DOCUMENTS = 500; // one page of the knowledge-base documents: enough for the counts
const MAX_REASON = 300;

export const CONNECTOR_LABEL = { folder: "Folder on the server", "google-drive": "Google Drive" };

const FOLDER_HELP = {
  folder: "A path on the server, under the folders the operator allows.",
  "google-drive": "The folder's id: the last part of its Drive address.",
};

/** The schedules offered: seconds between rounds, or "off". */
const SCHEDULES = [["off", "Off"], ["900", "Every 15 minutes"], ["3600", "Every hour"], ["86400", "Every day"]];

const STATUS_WORDS = [["AVAILABLE", "available"], ["INDEXING", "indexing"], ["FAIL", "failed"]];

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** "off", "every 15 minutes", "every hour", "every 2 days"… */
export function scheduleText(schedule) {
  if (schedule === "off" || !schedule) return "off";
  for (const [unit, seconds] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (schedule % seconds === 0) {
      const count = schedule / seconds;
      return count === 1 ? `every ${unit}` : `every ${count} ${unit}s`;
    }
  }
  return `every ${schedule} seconds`;
}

function bounded(text) {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 1)}…` : text;
}

function scheduleOptions(current) {
  const options = SCHEDULES.map(([value, label]) => h("option", { value }, label));
  if (current !== "off" && !SCHEDULES.some(([value]) => value === String(current))) {
    // set through the API to another interval: offered as it is, so that the select shows it
    const text = scheduleText(current);
    options.push(h("option", { value: String(current) }, text[0].toUpperCase() + text.slice(1)));
  }
  return options;
}

function scheduleValue(value) {
  return value === "off" ? "off" : Number(value);
}

export class LinkedFoldersPanel {
  constructor(page) {
    this.page = page;
    this.root = byRole("linked-folders");
    this.list = byRole("linked-items", this.root);
    this.error = byRole("linked-error", this.root);
    this.status = byRole("linked-status", this.root);
    this.details = byRole("link-details", this.root);
    this.form = byRole("link-form", this.root);
    this.formError = byRole("link-error", this.root);
    this.syncButton = this.root.querySelector('[data-action="sync-folders"]');
    this.folders = [];
    this.documents = new Map(); // linked folder id -> its documents
    this.entries = new Map(); // linked folder id -> {item, select}
    this.following = null; // {until, since: Map(folder id -> last_sync_at before)}
    this.ticket = 0;
    this.syncing = false;
    this.readFailed = false; // whether the error shown is a failed read of the list
    this.form.elements.schedule.replaceChildren(...scheduleOptions("off"));
    this.form.elements.connector.addEventListener("change", () => this.renderFormHelp());
    this.form.addEventListener("submit", (event) => this.link(event));
    this.syncButton.addEventListener("click", () => this.syncNow());
    this.renderFormHelp();
    this.poller = new Poller(() => this.tick(), () => this.interval());
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}/linked-folders`;
  }

  interval() {
    if (this.following) return FOLLOW_POLL_MS;
    return this.folders.some((folder) => folder.schedule !== "off") ? SCHEDULED_POLL_MS : null;
  }

  /** Read the folders and their documents and show them; a read overtaken by a newer one is dropped. */
  async load() {
    const ticket = ++this.ticket;
    const data = await api(this.base);
    let documents = [];
    if (data.items.length) {
      try {
        const page = await api(withQuery(`/api/knowledge-base/${encodeURIComponent(this.page.id)}/documents`, { per_page: MAX_DOCUMENTS }));
        documents = page.data.items;
      } catch {
        documents = null; // the counts are left out; the list itself is still right
      }
    }
    if (ticket !== this.ticket) return false;
    if (this.readFailed) this.showReadError(null); // an action's error stays until the next action
    this.folders = data.items;
    this.documents = new Map();
    for (const file of documents || []) {
      if (!this.documents.has(file.linked_folder_id)) this.documents.set(file.linked_folder_id, []);
      this.documents.get(file.linked_folder_id).push(file);
    }
    this.countsKnown = documents !== null;
    this.renderList();
    this.poller.schedule();
    return true;
  }

  /** The list shown is from before: say so (the next read that succeeds clears it). */
  showReadError(error) {
    this.readFailed = Boolean(error);
    showError(this.error, error);
  }

  /** What went wrong with the creator's last action (shown until the next one). */
  actionError(error) {
    this.readFailed = false;
    showError(this.error, error);
  }

  /** Read the list again after an action, saying so if that read fails (the action itself did not). */
  async reload() {
    this.poller.cancel();
    try {
      await this.load();
    } catch (error) {
      this.showReadError(error);
      this.poller.schedule();
    }
  }

  /** One poll: the folders, then the sources list and the notebook's progress when documents changed. */
  async tick() {
    const before = this.documentsKey();
    try {
      if (!(await this.load())) return;
    } catch (error) {
      this.showReadError(error);
      throw error;
    }
    if (!this.following) return;
    const changed = before !== this.documentsKey();
    if (changed) await this.page.sources.load().catch(() => {});
    this.page.progress?.kick();
    if (Date.now() > this.following.until || this.settled()) {
      this.following = null;
      if (!changed) await this.page.sources.load().catch(() => {});
      this.poller.schedule();
    }
  }

  documentsKey() {
    return JSON.stringify([...this.documents.values()].flat().map((file) => [file.id, file.status]));
  }

  /** Each followed folder synced again, nothing is indexing and no ingestion runs. */
  settled() {
    const { since } = this.following;
    const synced = this.folders.every((folder) => !since.has(folder.id) || folder.last_sync_at !== since.get(folder.id));
    const indexing = [...this.documents.values()].flat().some((file) => file.status === "INDEXING");
    return synced && !indexing && !jobActive(this.page.detail.job);
  }

  /** Poll until the folders of `folders` synced again (and what they brought is indexed). */
  follow(folders) {
    this.following = {
      until: Date.now() + FOLLOW_FOR_MS,
      since: new Map(folders.map((folder) => [folder.id, folder.last_sync_at])),
    };
    this.poller.schedule();
  }

  say(text) {
    this.status.textContent = text;
  }

  renderList() {
    const owner = this.page.detail.is_owner;
    this.syncButton.disabled = this.syncing || !this.folders.length;
    const seen = new Set();
    const items = this.folders.map((folder) => {
      seen.add(folder.id);
      let entry = this.entries.get(folder.id);
      if (!entry || entry.owner !== owner) {
        entry = this.buildItem(folder, owner);
        this.entries.set(folder.id, entry);
      }
      this.renderItem(entry, folder);
      return entry.item;
    });
    for (const id of [...this.entries.keys()]) if (!seen.has(id)) this.entries.delete(id);
    if (!items.length) {
      this.list.replaceChildren(h("li", { class: "muted" }, "No linked folders."));
      return;
    }
    // Items already shown stay in place (a focused schedule select keeps its focus).
    const wanted = new Set(items);
    for (const node of [...this.list.children]) if (!wanted.has(node)) node.remove();
    items.forEach((item, index) => {
      if (this.list.children[index] !== item) this.list.insertBefore(item, this.list.children[index] ?? null);
    });
  }

  buildItem(folder, owner) {
    const entry = { owner, item: null, select: null };
    const children = [
      h("div", { class: "source-head" },
        h("span", { class: "source-title", "data-role": "linked-name" }, folder.name),
        h("span", { class: "badge" }, CONNECTOR_LABEL[folder.connector] || folder.connector)),
      h("p", { class: "muted linked-path", "data-role": "linked-path" }),
      h("p", { class: "muted", "data-role": "linked-documents" }),
      h("p", { class: "muted", "data-role": "linked-schedule" }),
      h("p", { class: "muted", "data-role": "linked-last-sync" }),
      h("p", { class: "source-error", "data-role": "linked-sync-error", hidden: true }),
    ];
    if (owner) {
      entry.select = h("select", {
        "aria-label": `Schedule of ${folder.name}`,
        onchange: () => this.changeSchedule(entry),
      });
      children.push(
        h("div", { class: "source-actions linked-actions" },
          h("label", { class: "inline-label" }, h("span", { "aria-hidden": "true" }, "Schedule"), entry.select),
          h("button", {
            type: "button",
            class: "danger",
            "data-action": "unlink-folder",
            "aria-label": `Unlink ${folder.name}`,
            onclick: () => this.unlink(entry),
          }, "Unlink")),
      );
    }
    entry.item = h("li", { class: "source-item linked-folder", "data-link-id": folder.id }, ...children);
    return entry;
  }

  renderItem(entry, folder) {
    entry.folder = folder;
    const { item } = entry;
    item.dataset.outcome = folder.last_sync_outcome || "none";
    byRole("linked-name", item).textContent = folder.name;
    byRole("linked-path", item).textContent = folder.folder;
    byRole("linked-path", item).title = folder.folder;
    byRole("linked-documents", item).textContent = this.documentsText(folder);
    const next = folder.schedule !== "off" && folder.next_sync_at ? ` · next after ${formatDate(folder.next_sync_at)}` : "";
    byRole("linked-schedule", item).textContent = `Scheduled sync: ${scheduleText(folder.schedule)}${next}`;
    const outcome = { ok: "ok", skipped: "skipped" }[folder.last_sync_outcome];
    byRole("linked-last-sync", item).textContent = folder.last_sync_at
      ? `Last sync: ${formatDate(folder.last_sync_at)}${outcome ? `, ${outcome}` : ""}`
      : "Last sync: not yet";
    const error = folder.last_sync_outcome === "skipped" && folder.last_sync_error;
    const errorBox = byRole("linked-sync-error", item);
    errorBox.hidden = !error;
    errorBox.textContent = error ? bounded(error.message || error.code || "") : "";
    if (entry.select && document.activeElement !== entry.select) {
      entry.select.replaceChildren(...scheduleOptions(folder.schedule));
      entry.select.value = String(folder.schedule);
    }
  }

  /** "2 documents · 1 available, 1 indexing" (the counts when the documents could be read). */
  documentsText(folder) {
    const total = plural(folder.document_count, "document");
    const documents = this.documents.get(folder.id) || [];
    if (!this.countsKnown || !documents.length) return total;
    const counts = STATUS_WORDS
      .map(([status, word]) => [documents.filter((file) => file.status === status).length, word])
      .filter(([count]) => count)
      .map(([count, word]) => `${count} ${word}`);
    return `${total} · ${counts.join(", ")}`;
  }

  renderFormHelp() {
    const connector = this.form.elements.connector.value;
    byRole("link-folder-help", this.form).textContent = FOLDER_HELP[connector] || "";
    this.form.elements.folder.placeholder = connector === "folder" ? "/srv/drives/team" : "Drive folder id";
  }

  async syncNow() {
    this.actionError(null);
    this.say("");
    this.syncing = true;
    this.syncButton.disabled = true;
    try {
      const result = await api(`${this.base}/sync`, { method: "POST" });
      if (!result.accepted) {
        this.say(result.reason === "SYNC_IN_PROGRESS" ? "A sync is still running." : `Not synced: ${result.reason || "refused"}.`);
      } else if (!result.matched_folder_count) {
        this.say(result.skipped?.[0]?.message || "There is no linked folder to sync.");
      } else {
        this.say(`Sync started: ${plural(result.matched_doc_count, "document")} will be checked.`);
        this.follow(this.folders);
      }
    } catch (error) {
      this.actionError(error);
    }
    this.syncing = false;
    await this.reload();
  }

  async changeSchedule(entry) {
    const { folder, select } = entry;
    this.actionError(null);
    try {
      const changed = await api(`${this.base}/${encodeURIComponent(folder.id)}`, {
        method: "PATCH",
        body: { schedule: scheduleValue(select.value) },
      });
      this.say(`${changed.name} now syncs on a schedule: ${scheduleText(changed.schedule)}.`);
      this.folders = this.folders.map((shown) => (shown.id === changed.id ? changed : shown));
      this.renderItem(entry, changed);
    } catch (error) {
      this.actionError(error);
      select.value = String(folder.schedule);
      if (error.status === 404) await this.reload();
      return;
    }
    this.poller.schedule();
  }

  async unlink(entry) {
    const { folder } = entry;
    const count = plural(folder.document_count, "document");
    const text = `Unlink “${folder.name}”? Its ${count} leave${folder.document_count === 1 ? "s" : ""} this notebook; the folder itself is not changed.`;
    if (!(await confirmDialog(byRole("confirm-dialog"), text))) return;
    this.actionError(null);
    try {
      await api(`${this.base}/${encodeURIComponent(folder.id)}`, { method: "DELETE" });
    } catch (error) {
      if (error.status !== 404) { // gone already is what was asked
        this.actionError(error);
        return;
      }
    }
    this.say(`Unlinked ${folder.name}.`);
    await this.reload();
    await Promise.all([this.page.sources.load(), this.page.poll()]).catch(() => {});
    (this.list.querySelector("li.linked-folder button") ?? this.details.querySelector("summary"))?.focus();
  }

  async link(event) {
    event.preventDefault();
    const data = new FormData(this.form);
    const folder = String(data.get("folder") || "").trim();
    showError(this.formError, null);
    if (!folder) {
      showError(this.formError, new Error("Give the folder to link."));
      return;
    }
    const submit = this.form.querySelector('button[type="submit"]');
    submit.disabled = true;
    try {
      const linked = await api(this.base, {
        method: "POST",
        body: { connector: data.get("connector"), folder, schedule: scheduleValue(data.get("schedule")) },
      });
      this.form.elements.folder.value = "";
      this.say(`Linked ${linked.name}: its files are being synced.`);
      this.follow([linked]);
      await this.reload();
      await this.page.sources.load().catch(() => {});
    } catch (error) {
      showError(this.formError, error);
    } finally {
      submit.disabled = false;
    }
  }
}
