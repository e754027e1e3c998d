/**
 * The notebook page: sources, chat, analyses, knowledge and settings side by side on wide screens,
 * as tabs on narrow ones. Only this visible notebook is polled: every 1.5 s while a job runs, every
 * 10 s otherwise, the shared transcript every 10 s, its analyses while one runs (analyses.js), and
 * its knowledge while a source note is being made (knowledge.js); a hidden tab polls nothing.
 */
import { api } from "./api.js";
import { AnalysesPanel } from "./analyses.js";
import { byRole, confirmDialog, formatDate, h, pageError } from "./dom.js";
import { MODE, VISIBILITY, jobActive, notebookStatus } from "./format.js";
import { LinkedFoldersPanel } from "./linked_folders.js";
import { Poller } from "./poller.js";
import { loadTables, renderTablesNav, startPage } from "./shell.js";
import { ChatPanel } from "./chat.js";
import { KnowledgePanel } from "./knowledge.js";
import { SourcesPanel } from "./sources.js";

const JOB_POLL_MS = 1500;
const IDLE_POLL_MS = 10000;
const TRANSCRIPT_POLL_MS = 10000;

/**
 * WAI-ARIA tabs; CSS shows them (and hides inactive panels) only on narrow screens.
 *
 * On a phone the page itself scrolls, so each tab remembers where its reader left it and a switch
 * goes back there (a tab never seen before opens at its top), as native tab bars do: a reader who
 * checks a source's state mid-conversation comes back to the same answer, not to another tab's
 * offset. Choosing the tab already shown goes to its top, also as native tab bars do.
 */
function setupTabs(initial) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const tablist = document.querySelector('[role="tablist"]');
  const scrolled = new Map(); // tab -> window.scrollY when its reader left it
  let current = null;
  const select = (tab, focus = false) => {
    // Side by side (tabs hidden) the panels share the page: nothing to remember or restore.
    const restore = current !== null && getComputedStyle(tablist).display !== "none";
    if (restore) scrolled.set(current, window.scrollY);
    const again = tab === current;
    current = tab;
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      document.getElementById(other.getAttribute("aria-controls")).classList.toggle("is-current", selected);
    }
    if (focus) tab.focus({ preventScroll: true });
    if (restore) window.scrollTo(0, again ? 0 : scrolled.get(tab) ?? 0);
  };
  for (const tab of tabs) {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (event) => {
      const index = tabs.indexOf(tab);
      const target = {
        ArrowRight: tabs[(index + 1) % tabs.length],
        ArrowLeft: tabs[(index - 1 + tabs.length) % tabs.length],
        Home: tabs[0],
        End: tabs.at(-1),
      }[event.key];
      if (target) {
        event.preventDefault();
        select(target, true);
      }
    });
  }
  select(document.getElementById(`tab-${initial}`));
}

class NotebookPage {
  constructor() {
    this.id = document.body.dataset.notebookId;
    this.settingsForm = byRole("settings-form");
    this.settingsForm.addEventListener("submit", (event) => this.saveSettings(event));
    document.querySelector('[data-action="delete-notebook"]').addEventListener("click", () => this.deleteNotebook());
  }

  get url() {
    return `/api/notebooks/${encodeURIComponent(this.id)}`;
  }

  async start() {
    this.session = await startPage();
    try {
      this.detail = await api(`${this.url}?open=1`);
    } catch (error) {
      pageError(error);
      return;
    }
    this.sources = new SourcesPanel(this);
    this.chat = new ChatPanel(this);
    this.analyses = new AnalysesPanel(this);
    this.linkedFolders = new LinkedFoldersPanel(this);
    this.knowledge = new KnowledgePanel(this);
    this.render();
    setupTabs(this.detail.active_revision ? "chat" : "sources");
    await Promise.all([
      this.sources.load(), this.chat.load(), this.analyses.load(), this.linkedFolders.load(), this.knowledge.load(),
    ]).catch(pageError);
    this.progress = new Poller(() => this.poll(), () => (jobActive(this.detail.job) ? JOB_POLL_MS : IDLE_POLL_MS));
    this.transcriptPoller = new Poller(
      () => this.chat.loadTranscript(),
      () => (this.detail.conversation_mode === "shared" ? TRANSCRIPT_POLL_MS : null),
    );
    this.progress.schedule();
    this.transcriptPoller.schedule();
    renderTablesNav(await loadTables());
  }

  /** Re-read the notebook; reload what a job's progress or a new revision changed. */
  async poll() {
    const before = this.detail;
    try {
      this.detail = await api(this.url);
    } catch (error) {
      pageError(error);
      throw error;
    }
    this.render();
    const job = (detail) => JSON.stringify(detail.job && [detail.job.id, detail.job.state, detail.job.done, detail.job.current_resource_id, detail.job.activity]);
    const revisionChanged = before.active_revision?.id !== this.detail.active_revision?.id;
    if (jobActive(before.job) && !jobActive(this.detail.job)) this.sources.notice = null;
    if (job(before) !== job(this.detail) || revisionChanged) await this.sources.load();
    else this.sources.renderProgress();
    if (revisionChanged) await Promise.all([this.chat.loadSources(), this.knowledge.loadCandidates()]);
    if (before.conversation_mode !== this.detail.conversation_mode) {
      await Promise.all([this.chat.loadTranscript(), this.analyses.load()]);
      this.transcriptPoller.schedule();
    }
    this.chat.renderComposer();
    this.analyses.renderForm();
    this.progress?.schedule();
  }

  render() {
    const detail = this.detail;
    document.title = `${detail.title} · Grounded notebooks`;
    byRole("notebook-title").textContent = detail.title;
    byRole("notebook-badges").replaceChildren(
      h("span", { class: "badge" }, VISIBILITY[detail.visibility]),
      h("span", { class: "badge" }, MODE[detail.conversation_mode]),
      h("span", { class: "badge badge-status", "data-role": "notebook-status" }, notebookStatus(detail)),
    );
    for (const element of document.querySelectorAll(".owner-only")) {
      if (element.dataset.action !== "cancel") element.hidden = !detail.is_owner;
    }
    this.renderSettings();
  }

  renderSettings() {
    const { elements } = this.settingsForm;
    const detail = this.detail;
    if (document.activeElement?.form !== this.settingsForm) {
      elements.title.value = detail.title;
      elements.visibility.value = detail.visibility;
      elements.conversation_mode.value = detail.conversation_mode;
    }
    for (const name of ["title", "visibility", "conversation_mode"]) elements[name].disabled = !detail.is_owner;
    const revision = detail.active_revision;
    const facts = [
      ["Created", formatDate(detail.created_at)],
      ["Resources", String(detail.resource_count)],
      ["Index", revision ? `revision ${revision.number}, completed ${formatDate(revision.completed_at)}` : "not built yet"],
      ["Your access", this.accessText()],
    ];
    byRole("facts").replaceChildren(...facts.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
  }

  accessText() {
    if (this.detail.is_owner) return "creator: you manage sources and settings";
    if (this.session.user.role === "viewer") return "viewer: you can read, not ask";
    return `${this.session.user.role}: you can ask; the creator manages sources`;
  }

  async saveSettings(event) {
    event.preventDefault();
    const data = new FormData(this.settingsForm);
    const status = byRole("settings-status");
    try {
      this.detail = await api(this.url, {
        method: "PATCH",
        body: { title: data.get("title"), visibility: data.get("visibility"), conversation_mode: data.get("conversation_mode") },
      });
      status.textContent = "Settings saved.";
      this.render();
      await Promise.all([this.chat.loadTranscript(), this.analyses.load()]);
      this.transcriptPoller.schedule();
    } catch (error) {
      status.textContent = error.message;
    }
  }

  async deleteNotebook() {
    if (!(await confirmDialog(byRole("confirm-dialog"), `Delete “${this.detail.title}” and its conversations? This cannot be undone.`))) return;
    try {
      await api(this.url, { method: "DELETE" });
      location.assign("/notebooks");
    } catch (error) {
      pageError(error);
    }
  }
}

new NotebookPage().start();
