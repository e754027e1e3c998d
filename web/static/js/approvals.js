/**
 * The edits the chat's assistant proposed to the notebook's notes, waiting for the signed-in
 * person: each shows the note, the block's text now and the text proposed, with Approve (the
 * edit runs, as the person's own edit would, authored by the agent) and Decline. An approval
 * lasts 15 minutes and is used once; the list is the server's, so it survives a reload.
 */
import { api } from "./api.js";
import { byRole, formatDate, h, showError } from "./dom.js";

const OUTCOME = { UPDATED: "The note was updated.", UNCHANGED: "The note already says this: nothing changed." };

export class ApprovalList {
  /** `changed()` is called after an approved edit, so the notes shown elsewhere are read again. */
  constructor(page, root, changed) {
    this.page = page;
    this.root = byRole("approvals", root);
    this.items = byRole("approval-items", this.root);
    this.error = byRole("approval-error", this.root);
    this.announcer = byRole("approval-announce", this.root);
    this.changed = changed;
  }

  get base() {
    return `/api/notebooks/${encodeURIComponent(this.page.id)}/knowledge/approvals`;
  }

  async load() {
    const pending = await api(this.base);
    this.render(pending.items);
  }

  render(approvals) {
    this.items.replaceChildren(...approvals.map((approval) => this.item(approval)));
    this.root.hidden = !approvals.length && this.error.hidden;
  }

  item(approval) {
    const { params } = approval;
    const decide = (how) => this.decide(approval, how, item);
    const item = h("li", { class: "approval", "data-approval-id": approval.id },
      h("p", { class: "approval-title" }, `${approval.note_title || "A note"}, block ${params.block_key}`),
      approval.before === null ? null : h("p", { class: "approval-before" },
        h("span", { class: "visually-hidden" }, "Now: "), h("del", {}, approval.before)),
      h("p", { class: "approval-after" }, h("span", { class: "visually-hidden" }, "Proposed: "), h("ins", {}, params.text)),
      h("p", { class: "muted" }, `Asked ${formatDate(approval.created_at)}; expires ${formatDate(approval.expires_at)}.`),
      h("div", { class: "row-actions" },
        h("button", { type: "button", class: "primary", "data-action": "approve", onclick: () => decide("approve") }, "Approve"),
        h("button", { type: "button", "data-action": "decline", onclick: () => decide("decline") }, "Decline")),
    );
    return item;
  }

  async decide(approval, how, item) {
    for (const button of item.querySelectorAll("button")) button.disabled = true;
    showError(this.error, null);
    try {
      if (how === "approve") {
        const edited = await api(approval.approve_url, { method: "POST" });
        this.announcer.textContent = OUTCOME[edited.status] || "Done.";
        this.changed();
      } else {
        await api(`${this.base}/${encodeURIComponent(approval.id)}`, { method: "DELETE" });
        this.announcer.textContent = "Declined: the note stays as it is.";
      }
    } catch (error) {
      showError(this.error, error);
    }
    await this.load();
  }
}
