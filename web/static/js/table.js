/**
 * A vault table's records. The multi-select "Create notebook" action exists only when this
 * table's identity is the configured References table (the server says so by id, never by name).
 */
import { api, withQuery } from "./api.js";
import { byRole, h, pageError, renderPager } from "./dom.js";
import { MAX_SELECTED } from "./selector.js";
import { canWrite, loadTables, renderTablesNav, startPage } from "./shell.js";
import { openCreateDialog } from "./create.js";

const PER_PAGE = 50;
const tableId = document.body.dataset.tableId;
const state = { q: "", page: 1, bulk: false, selected: new Set() };

function updateBulkBar() {
  const count = state.selected.size;
  byRole("bulk-count").textContent = `${count} selected`;
  document.querySelector('[data-action="create-notebook"]').disabled = count === 0;
}

function checkbox(record) {
  const box = h("input", {
    type: "checkbox",
    checked: state.selected.has(record.resource_id),
    "aria-label": `Select ${record.title || record.resource_id}`,
  });
  box.addEventListener("change", () => {
    if (box.checked && state.selected.size < MAX_SELECTED) state.selected.add(record.resource_id);
    else {
      box.checked = false;
      state.selected.delete(record.resource_id);
    }
    updateBulkBar();
  });
  return box;
}

function row(record) {
  const usable = record.usable !== false;
  return h(
    "tr",
    { class: usable ? null : "row-muted" },
    state.bulk ? h("td", { class: "cell-check" }, usable ? checkbox(record) : null) : null,
    h("th", { scope: "row" }, record.title || record.resource_id),
    h("td", {}, usable ? "Has evidence" : h("span", { class: "muted" }, record.excluded.message)),
  );
}

function renderHead() {
  const head = byRole("records-head");
  head.replaceChildren(
    state.bulk ? h("th", { scope: "col", class: "cell-check" }, h("span", { class: "visually-hidden" }, "Select")) : null,
    h("th", { scope: "col" }, "Title"),
    h("th", { scope: "col" }, "Evidence"),
  );
}

async function load() {
  try {
    const data = await api(
      withQuery(`/api/tables/${encodeURIComponent(tableId)}/records`, { q: state.q, page: state.page, per_page: PER_PAGE }),
    );
    const rows = byRole("records-rows");
    rows.replaceChildren(...data.items.map(row));
    if (!data.items.length) rows.append(h("tr", {}, h("td", { colspan: "3", class: "muted" }, "No records.")));
    const omitted = data.omitted ? ` · ${data.omitted} cannot be chosen (the reason is beside each)` : "";
    byRole("records-summary").textContent = `${data.total} record${data.total === 1 ? "" : "s"}${omitted}`;
    renderPager(byRole("records-pager"), {
      page: state.page,
      perPage: PER_PAGE,
      total: data.total,
      onPage: (page) => {
        state.page = page;
        load();
      },
    });
  } catch (error) {
    pageError(error);
  }
}

async function main() {
  const session = await startPage();
  const tables = await loadTables();
  renderTablesNav(tables);
  const table = tables.find((candidate) => candidate.id === tableId);
  if (!table) {
    pageError(new Error("This table is not in the vault."));
    return;
  }
  byRole("table-title").textContent = table.name;
  document.title = `${table.name} · Grounded notebooks`;
  state.bulk = Boolean(table.is_references) && canWrite(session);
  if (state.bulk) {
    byRole("bulk-bar").hidden = false;
    document.querySelector('[data-action="create-notebook"]').addEventListener("click", () =>
      openCreateDialog([...state.selected]),
    );
    updateBulkBar();
  } else {
    byRole("bulk-bar").remove();
  }
  const form = byRole("search-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    state.q = form.elements.q.value.trim();
    state.page = 1;
    load();
  });
  renderHead();
  load();
}

main();
