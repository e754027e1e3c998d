/**
 * A citation opened as its own page (e.g. in a new tab): the same viewer as the chat's dialog,
 * under a heading naming the cited document and its place in it, breadcrumbs back to the notebook
 * and the library, and a link to the original. Evidence that is not there, or in a notebook the
 * reader may not see (the API answers 404 for both), gets a page that says so.
 */
import { api } from "./api.js";
import { byRole, showError } from "./dom.js";
import { loadTables, renderTablesNav, startPage } from "./shell.js";
import { fetchEvidence, locatorText, originalLink, showEvidence } from "./viewer.js";

const SITE = "Grounded notebooks";

/** Why a citation link leads nowhere, by the API's error code. */
const MISSING = {
  EVIDENCE_NOT_FOUND: "This passage is not in that revision of the notebook: the link may be incomplete or mistyped.",
  REVISION_NOT_FOUND: "That revision of the notebook is not kept any more, or the link is mistyped.",
  NOTEBOOK_NOT_FOUND: "The notebook does not exist, or it is not shared with you.",
  REVISION_REQUIRED: "The link lacks the citation's revision (?revision=…).",
};

function setTitle(heading, detail = "") {
  byRole("evidence-title").textContent = heading;
  byRole("current-crumb").textContent = heading;
  document.title = [heading, detail, SITE].filter(Boolean).join(" · ");
}

function showMissing(viewer, error) {
  const notFound = error.status === 404 || error.status === 400;
  setTitle(notFound ? "Evidence not found" : "The evidence could not be shown");
  viewer.dataset.state = "error";
  viewer.hidden = true;
  const why = MISSING[error.code];
  showError(byRole("evidence-error"), new Error(why ? `${why} (${error.message})` : error.message));
}

function showOriginal(evidence, notebookId) {
  const link = byRole("open-original");
  const original = originalLink(evidence, notebookId);
  link.hidden = !original;
  if (!original) return;
  link.href = original.href;
  link.textContent = original.text;
  if (original.external) {
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
}

async function main() {
  await startPage();
  const { notebookId, chunkId, revisionId } = document.body.dataset;
  const quote = new URLSearchParams(location.search).get("quote") || "";
  const viewer = byRole("viewer");
  const notebook = api(`/api/notebooks/${encodeURIComponent(notebookId)}`).then(
    (detail) => {
      byRole("notebook-link").textContent = detail.title;
    },
    () => {}, // not visible: the evidence's own error says so
  );
  let evidence;
  try {
    evidence = await fetchEvidence({ notebookId, chunkId, revisionId });
  } catch (error) {
    showMissing(viewer, error);
    await notebook;
    renderTablesNav(await loadTables());
    return;
  }
  const where = locatorText(evidence.locator);
  byRole("evidence-locator").textContent = where;
  showOriginal(evidence, notebookId);
  setTitle(evidence.title || evidence.resource_id, where && where[0].toLowerCase() + where.slice(1));
  await Promise.all([
    notebook,
    showEvidence(viewer, { notebookId, chunkId, revisionId, quote, original: false }, evidence),
  ]);
  renderTablesNav(await loadTables());
}

main();
