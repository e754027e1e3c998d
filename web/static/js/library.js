/** The library: notebooks the user may discover, searchable and paginated (never polled). */
import { api, withQuery } from "./api.js";
import { byRole, h, pageError, renderPager } from "./dom.js";
import { MODE, VISIBILITY, notebookStatus } from "./format.js";
import { canWrite, loadTables, renderTablesNav, startPage } from "./shell.js";
import { openCreateDialog } from "./create.js";

const PER_PAGE = 25;
const state = { q: new URLSearchParams(location.search).get("q") || "", page: Number(new URLSearchParams(location.search).get("page")) || 1 };

function row(notebook) {
  const link = h("a", { href: `/notebooks/${encodeURIComponent(notebook.id)}` }, notebook.title);
  return h(
    "tr",
    {},
    h("th", { scope: "row" }, link, notebook.is_owner ? h("span", { class: "muted" }, " · yours") : null),
    h("td", { "data-label": "Visibility" }, VISIBILITY[notebook.visibility] ?? notebook.visibility),
    h("td", { "data-label": "Conversation" }, MODE[notebook.conversation_mode] ?? notebook.conversation_mode),
    h("td", { "data-label": "Sources" }, String(notebook.resource_count)),
    h("td", { "data-label": "Status" }, h("span", { class: "status" }, notebookStatus(notebook))),
  );
}

async function load() {
  history.replaceState(null, "", withQuery("/notebooks", { q: state.q, page: state.page > 1 ? state.page : "" }));
  try {
    const data = await api(withQuery("/api/notebooks", { q: state.q, page: state.page, per_page: PER_PAGE }));
    const rows = byRole("library-rows");
    rows.replaceChildren(...data.items.map(row));
    if (!data.items.length) {
      rows.append(h("tr", {}, h("td", { colspan: "5", class: "muted" }, state.q ? "No notebook matches." : "No notebooks yet.")));
    }
    byRole("library-summary").textContent = `${data.total} notebook${data.total === 1 ? "" : "s"}${state.q ? ` matching “${state.q}”` : ""}`;
    renderPager(byRole("library-pager"), {
      page: data.page,
      perPage: data.per_page,
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
  const form = byRole("search-form");
  form.elements.q.value = state.q;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    state.q = form.elements.q.value.trim();
    state.page = 1;
    load();
  });
  const newButton = document.querySelector('[data-action="new-notebook"]');
  newButton.hidden = !canWrite(session);
  newButton.addEventListener("click", () => openCreateDialog([]));
  load();
  const tables = await loadTables();
  renderTablesNav(tables);
  byRole("table-list").replaceChildren(
    ...tables.map((table) =>
      h("li", {}, h("a", { href: `/tables/${encodeURIComponent(table.id)}` }, table.name),
        table.is_references ? h("span", { class: "muted" }, " · References table") : null),
    ),
  );
  if (!tables.length) byRole("table-list").append(h("li", { class: "muted" }, "No tables found in the vault."));
}

main();
