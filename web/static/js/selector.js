/**
 * The References selector (creation and "add sources"). The server sorts the whole matching
 * catalogue accent-insensitively before paginating and derives the type/author/tag facets from
 * the table schema; this module keeps the selection across pages, searches and filters.
 */
import { api, withQuery } from "./api.js";
import { byRole, debounce, h, renderPager, showError } from "./dom.js";

export const MAX_SELECTED = 1000;
const PER_PAGE = 50;
const FACETS = ["type", "author", "tag"];

export class ResourceSelector {
  /**
   * `root` is a `[data-role=selector]` fieldset; `initial` the ids selected beforehand; with
   * `notebookId`, resources already in that notebook are marked and cannot be chosen again.
   */
  constructor(root, { initial = [], errorBox = null, notebookId = null } = {}) {
    this.root = root;
    this.errorBox = errorBox;
    this.notebookId = notebookId;
    this.selected = new Set(initial);
    this.query = { q: "", type: "", author: "", tag: "", page: 1 };
    this.search = byRole("q", root);
    this.search.value = "";
    this.onSearch = debounce(() => this.load({ q: this.search.value.trim(), page: 1 }), 250);
    this.search.addEventListener("input", this.onSearch);
    for (const facet of FACETS) {
      const select = root.querySelector(`[data-facet="${facet}"]`);
      select.value = "";
      select.onchange = () => this.load({ [facet]: select.value, page: 1 });
    }
    this.renderCount();
  }

  /** Stop listening (the dialog is reused with a fresh selector next time). */
  destroy() {
    this.search.removeEventListener("input", this.onSearch);
  }

  ids() {
    return [...this.selected];
  }

  async load(changes = {}) {
    Object.assign(this.query, changes);
    try {
      const scope = this.notebookId ? { notebook_id: this.notebookId } : {};
      const data = await api(withQuery("/api/notebooks/resources", { ...this.query, ...scope, per_page: PER_PAGE }));
      if (this.errorBox) showError(this.errorBox, null);
      this.render(data);
    } catch (error) {
      if (this.errorBox) showError(this.errorBox, error);
    }
  }

  render(data) {
    for (const facet of FACETS) this.renderFacet(facet, data.facets?.[facet] ?? []);
    const tableNote = byRole("table-note", this.root);
    tableNote.hidden = !data.table_changed;
    tableNote.textContent = data.table_changed
      ? `These are the records of the table this notebook was created from (${data.table_id}); the configured References table has changed since.`
      : "";
    const omitted = byRole("omitted", this.root);
    const reasons = (data.omitted_reasons ?? []).map((reason) => `${reason.count} × ${reason.message}`);
    omitted.textContent = data.omitted
      ? `${data.omitted} record${data.omitted === 1 ? "" : "s"} omitted: ${reasons.join("; ")}.`
      : "";
    const list = byRole("items", this.root);
    list.replaceChildren(...data.items.map((item) => this.renderItem(item)));
    if (!data.items.length) list.append(h("li", { class: "muted" }, "No matching resources."));
    renderPager(byRole("pager", this.root), {
      page: data.page,
      perPage: data.per_page,
      total: data.total,
      onPage: (page) => this.load({ page }),
    });
  }

  renderFacet(facet, values) {
    const select = this.root.querySelector(`[data-facet="${facet}"]`);
    const current = this.query[facet];
    const first = select.options[0];
    const options = values.map((entry) =>
      h("option", { value: entry.value, selected: entry.value === current }, `${entry.value} (${entry.count})`),
    );
    if (current && !values.some((entry) => entry.value === current)) {
      options.unshift(h("option", { value: current, selected: true }, current));
    }
    select.replaceChildren(first, ...options);
  }

  renderItem(item) {
    const checkbox = h("input", {
      type: "checkbox",
      value: item.resource_id,
      checked: item.member || this.selected.has(item.resource_id),
      disabled: item.member || (!this.selected.has(item.resource_id) && this.selected.size >= MAX_SELECTED),
      "data-member": item.member ? "" : null,
    });
    checkbox.addEventListener("change", () => {
      if (checkbox.checked) this.selected.add(item.resource_id);
      else this.selected.delete(item.resource_id);
      this.renderCount();
      this.syncLimit();
    });
    const details = [item.type, (item.authors || []).join(", "), (item.kinds || []).join(" + ")]
      .filter(Boolean)
      .join(" · ");
    return h(
      "li",
      {},
      h("label", { class: "check-row" }, checkbox,
        h("span", { class: "item-title" }, item.title || item.resource_id),
        item.member ? h("span", { class: "badge" }, "In this notebook") : null,
        details ? h("span", { class: "muted item-meta" }, details) : null),
    );
  }

  renderCount() {
    const count = this.selected.size;
    byRole("selected-count", this.root).textContent =
      `(${count} selected${count >= MAX_SELECTED ? `, the maximum of ${MAX_SELECTED}` : ""})`;
  }

  /** At the limit, only already selected boxes stay enabled. */
  syncLimit() {
    const full = this.selected.size >= MAX_SELECTED;
    for (const box of byRole("items", this.root).querySelectorAll('input[type="checkbox"]:not([data-member])')) {
      box.disabled = full && !box.checked;
    }
  }
}
