import { html, page } from "./html.js"

/** A page that ends the flow with an explanation: nothing to submit, nowhere redirected. */
export const messagePage = (title: string, text: string, status: number) =>
  page(title, html`<h1>${title}</h1><p>${text}</p><p class="muted">You can close this window.</p>`, { status })
