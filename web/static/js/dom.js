/** Small DOM helpers: build elements without innerHTML (text is never parsed as markup). */

/**
 * `h("a", {href, class: "x", onclick: fn, hidden: true, "aria-label": "…"}, child, …)`.
 * Functions become listeners, booleans toggle attributes, null/undefined/false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  element.append(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
  return element;
}

/** The element marked `data-role="name"` inside `root`. */
export function byRole(name, root = document) {
  return root.querySelector(`[data-role="${name}"]`);
}

/** Show an error (or hide the box when `error` is null). */
export function showError(box, error) {
  box.hidden = !error;
  box.textContent = error ? error.message || String(error) : "";
}

/** The page-level error banner every template has. */
export function pageError(error) {
  showError(byRole("page-error"), error);
}

/** A short local date and time, or a dash. */
export function formatDate(iso) {
  if (!iso) return "never";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Previous/next buttons and "page x of y" for a paginated list. */
export function renderPager(nav, { page, perPage, total, onPage }) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  nav.replaceChildren();
  if (pages <= 1) return;
  nav.append(
    h("button", { type: "button", disabled: page <= 1, onclick: () => onPage(page - 1) }, "Previous"),
    h("span", { class: "muted" }, ` Page ${page} of ${pages} `),
    h("button", { type: "button", disabled: page >= pages, onclick: () => onPage(page + 1) }, "Next"),
  );
}

/** Resolve to the button value a `<dialog>` of the confirm kind was closed with. */
export function confirmDialog(dialog, text) {
  byRole("confirm-text", dialog).textContent = text;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

/** Run `fn` at most once per `ms` of quiet (search boxes). */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
