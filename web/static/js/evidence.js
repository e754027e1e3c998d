/** A citation opened as its own page (e.g. in a new tab): the same viewer as the chat's dialog. */
import { byRole } from "./dom.js";
import { loadTables, renderTablesNav, startPage } from "./shell.js";
import { showEvidence } from "./viewer.js";

async function main() {
  await startPage();
  const { notebookId, chunkId, revisionId } = document.body.dataset;
  const quote = new URLSearchParams(location.search).get("quote") || "";
  await showEvidence(byRole("viewer"), { notebookId, chunkId, revisionId, quote });
  renderTablesNav(await loadTables());
}

main();
