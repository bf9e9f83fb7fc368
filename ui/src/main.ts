// The dashboard: a hash router over the jobs list, a job's page and the submit form, the token
// dialog, and a banner for errors (a 401 opens the token dialog, and says whether the server
// wants a token or refused the one sent).
import "./style.css";
import { ApiError, getToken, setToken } from "./api.ts";
import { h, replace } from "./dom.ts";
import { jobView } from "./job-view.ts";
import { jobsView } from "./jobs-view.ts";
import { submitView } from "./submit-view.ts";

const main = document.getElementById("main")!;
const banner = document.getElementById("banner")!;
const tokenButton = document.getElementById("token-button") as HTMLButtonElement;
let leave: () => void = () => undefined;
/** The saved token got a 401: it is wrong or revoked, not missing. */
let tokenRefused = false;

function showError(err: unknown): void {
  if (err instanceof ApiError && err.status === 401) {
    tokenRefused = getToken() !== null;
    renderTokenButton();
    showBanner(
      tokenRefused
        ? "The server refused this token: it is wrong, expired or revoked. Enter another one."
        : "This server needs a token: enter your API key or token.",
    );
    openTokenDialog();
    return;
  }
  showBanner(err instanceof ApiError ? `${err.code}: ${err.message}` : `Could not reach the server: ${(err as Error)?.message ?? err}`);
}

function showBanner(text: string): void {
  banner.hidden = false;
  replace(
    banner,
    h("span", {}, text),
    h("button", { type: "button", className: "ghost", "aria-label": "Dismiss", onclick: () => (banner.hidden = true) }, "×"),
  );
}

function route(): void {
  leave();
  banner.hidden = true;
  const hash = window.location.hash.replace(/^#/, "") || "/";
  const job = /^\/jobs\/([^/]+)$/.exec(hash);
  const [path, query] = hash.split("?", 2) as [string, string | undefined];
  if (job) leave = jobView(main, decodeURIComponent(job[1]!), showError);
  else if (hash === "/submit") leave = submitView(main, (j) => (window.location.hash = `#/jobs/${j.id}`), showError);
  else leave = jobsView(main, showError, path === "/" ? new URLSearchParams(query ?? "") : new URLSearchParams());
  for (const a of Array.from(document.querySelectorAll<HTMLAnchorElement>("[data-nav]"))) {
    const current = (a.dataset.nav === "submit") === (hash === "/submit") && !job;
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  // Move focus to the new page's heading, as a page load would.
  queueMicrotask(() => main.querySelector<HTMLElement>("h1")?.focus());
}

function renderTokenButton(): void {
  const token = getToken();
  tokenButton.textContent = token ? (tokenRefused ? "Token refused" : "Token: set") : "Set token";
  tokenButton.classList.toggle("refused", token !== null && tokenRefused);
  tokenButton.setAttribute(
    "aria-label",
    token ? (tokenRefused ? "The server refused the API token: change or remove it" : "Change or remove the API token") : "Set an API token",
  );
}

function openTokenDialog(): void {
  if (document.getElementById("token-dialog")) return;
  const input = h("input", { type: "password", id: "token-input", autocomplete: "off", value: getToken() ?? "" });
  const remember = h("input", { type: "checkbox", id: "token-remember", checked: localStorage.getItem("flowgate.token") !== null });
  const dialog = h(
    "dialog",
    { id: "token-dialog", "aria-labelledby": "token-title" },
    h(
      "form",
      { method: "dialog" },
      h("h2", { id: "token-title" }, "API token"),
      tokenRefused && getToken() ? h("p", { className: "error", id: "token-refused" }, "The server refused the token saved here.") : null,
      h(
        "p",
        { className: "muted small" },
        "Sent as ",
        h("code", {}, "Authorization: Bearer"),
        " with every request from this page. Kept in this tab unless you choose to remember it.",
      ),
      h("label", { for: "token-input" }, "Token or API key"),
      input,
      h("label", { className: "check" }, remember, " Remember on this browser"),
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", className: "ghost", onclick: () => dialog.close("clear") }, "Forget token"),
        h("button", { type: "button", className: "ghost", onclick: () => dialog.close("cancel") }, "Cancel"),
        h("button", { type: "submit", value: "save", id: "token-save" }, "Save"),
      ),
    ),
  );
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "save") setToken(input.value.trim() || null, remember.checked);
    if (dialog.returnValue === "clear") setToken(null);
    if (dialog.returnValue === "save" || dialog.returnValue === "clear") tokenRefused = false;
    dialog.remove();
    renderTokenButton();
    if (dialog.returnValue === "save" || dialog.returnValue === "clear") route();
  });
  document.body.append(dialog);
  dialog.showModal();
  input.focus();
}

tokenButton.addEventListener("click", openTokenDialog);
window.addEventListener("hashchange", route);
renderTokenButton();
route();
