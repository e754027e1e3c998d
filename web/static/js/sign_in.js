/** The sign-in page: an account (name, password, workspace) or an API token. */
import { signIn } from "./api.js";
import { byRole, showError } from "./dom.js";

const errorBox = byRole("sign-in-error");
const next = document.body.dataset.next || "/notebooks";

function bind(form, credentials) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(errorBox, null);
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      await signIn(credentials(new FormData(form)));
      location.assign(next);
    } catch (error) {
      showError(errorBox, error);
      button.disabled = false;
    }
  });
}

bind(byRole("password-form"), (data) => {
  const body = { username: data.get("username"), password: data.get("password") };
  if (data.get("workspace")) body.workspace = data.get("workspace");
  return body;
});
bind(byRole("token-form"), (data) => ({ token: String(data.get("token")).trim() }));
