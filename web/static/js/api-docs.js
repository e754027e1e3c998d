/**
 * /api/docs: render the OpenAPI document with Swagger UI (loaded before this file, from the
 * service itself). A file of its own because the CSP allows no inline script.
 *
 * "Try it out" runs as the signed-in dashboard user when there is a session cookie: requests
 * that change state then need the session's CSRF token, which GET /api/session hands out (asked
 * the first time one is sent, so reading the page never calls the API). An API token can be
 * given with "Authorize" instead.
 */
(function () {
  "use strict";
  const root = document.getElementById("swagger-ui");
  const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);
  let csrfToken = null;

  async function sessionCsrfToken() {
    if (csrfToken === null) {
      const response = await fetch("/api/session", { credentials: "same-origin", headers: { Accept: "application/json" } });
      csrfToken = response.ok ? (await response.json()).csrf_token || "" : "";
    }
    return csrfToken;
  }

  window.ui = window.SwaggerUIBundle({
    url: root.dataset.specUrl,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    withCredentials: true,
    async requestInterceptor(request) {
      const method = (request.method || "GET").toUpperCase();
      const bearer = Object.keys(request.headers || {}).some((name) => name.toLowerCase() === "authorization");
      if (!safeMethods.has(method) && !bearer) {
        const token = await sessionCsrfToken().catch(() => "");
        if (token) request.headers["X-CSRF-Token"] = token;
      }
      return request;
    },
  });
})();
