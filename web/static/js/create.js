/** The "Create notebook" dialog: title, visibility, conversation mode and the selector. */
import { api } from "./api.js";
import { byRole, showError } from "./dom.js";
import { ResourceSelector } from "./selector.js";

const dialog = byRole("create-dialog");
const form = byRole("create-form", dialog);
const errorBox = byRole("form-error", dialog);
let selector = null;

dialog.querySelector('[data-action="close"]').addEventListener("click", () => dialog.close());

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const resourceIds = selector.ids();
  if (!resourceIds.length) {
    showError(errorBox, new Error("Select at least one resource."));
    return;
  }
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    const created = await api("/api/notebooks", {
      method: "POST",
      body: {
        title: data.get("title"),
        visibility: data.get("visibility"),
        conversation_mode: data.get("conversation_mode"),
        resource_ids: resourceIds,
      },
    });
    location.assign(`/notebooks/${encodeURIComponent(created.id)}`);
  } catch (error) {
    showError(errorBox, error);
    submit.disabled = false;
  }
});

/** Open the dialog with `resourceIds` already selected (the table's bulk selection). */
export function openCreateDialog(resourceIds = []) {
  selector?.destroy();
  form.reset();
  showError(errorBox, null);
  selector = new ResourceSelector(byRole("selector", dialog), { initial: resourceIds, errorBox });
  selector.load({ page: 1 });
  dialog.showModal();
  form.elements.title.focus();
}
