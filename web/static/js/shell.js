/** What every signed-in page does first: who am I, the top bar, and the list of vault tables. */
import { api, currentSession, signOut } from "./api.js";
import { byRole, h, pageError } from "./dom.js";

/** Resolves to the session, or never (the browser is on its way to sign-in). */
export async function startPage() {
  const session = await currentSession().catch((error) => {
    if (error.status === 401) return new Promise(() => {});  // api() sends the browser to sign in
    pageError(error);
    throw error;
  });
  byRole("account-name").textContent = `${session.user.name} (${session.user.role}) · ${session.workspace?.name ?? ""}`;
  document.querySelector('[data-action="sign-out"]').addEventListener("click", async () => {
    await signOut().catch(() => {});
    location.assign("/sign-in");
  });
  return session;
}

/** The vault's tables, References first; an empty list when the server cannot list them. */
export async function loadTables() {
  try {
    const { items } = await api("/api/tables");
    return [...items].sort((a, b) => Number(b.is_references) - Number(a.is_references));
  } catch (error) {
    return [];
  }
}

/** Links to the tables in the top bar. */
export function renderTablesNav(tables) {
  byRole("tables-nav").replaceChildren(
    ...tables.map((table) => h("a", { href: `/tables/${encodeURIComponent(table.id)}` }, table.name)),
  );
}

export function canWrite(session) {
  return session.user.role !== "viewer";
}
