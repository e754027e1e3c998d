/**
 * Every dashboard call to /api goes through here. The browser is signed in by an HttpOnly
 * cookie, so scripts never see a token; state-changing calls carry the CSRF token that
 * /api/session hands out, which a page on another origin cannot read.
 */

let csrfToken = null;
/** Set once signing out begins: the sign-out chooses where the browser goes next. */
let signingOut = false;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Send the browser to sign-in, coming back here afterwards. Not while signing out: a poll that
 * comes back 401 after the session ended would otherwise race the sign-out's own navigation.
 */
function goToSignIn() {
  if (signingOut) return;
  const next = location.pathname + location.search;
  location.assign(`/sign-in?next=${encodeURIComponent(next)}`);
}

async function request(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    signal,
  });
  if (response.status === 401 && !(method === "POST" && path === "/api/session")) {
    goToSignIn();
  }
  if (!response.ok) {
    const error = await response.json().catch(() => ({}));
    throw new ApiError(response.status, error.code || "HTTP_ERROR", error.message || response.statusText);
  }
  return response;
}

/** A JSON call; resolves to the parsed body (null for 204). */
export async function api(path, options = {}) {
  const response = await request(path, options);
  return response.status === 204 ? null : response.json();
}

/** Raw bytes of an authorised file (the PDF viewer needs them). */
export async function apiBytes(path) {
  const response = await request(path);
  return response.arrayBuffer();
}

/** `path?query` with empty values left out. */
export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** The signed-in browser's session: `{user, workspace, csrf_token}`. */
export async function currentSession() {
  const session = await api("/api/session");
  csrfToken = session.csrf_token || null;
  return session;
}

export async function signIn(credentials) {
  const session = await api("/api/session", { method: "POST", body: credentials });
  csrfToken = session.csrf_token;
  return session;
}

export async function signOut() {
  signingOut = true;
  await api("/api/session", { method: "DELETE" });
  csrfToken = null;
}
