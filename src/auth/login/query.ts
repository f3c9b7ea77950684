/** Reading the query of a browser request to the /sso pages, and ending one with a message page. */
import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { OAuthParams } from "../authorize/params.js"
import { messagePage } from "../pages/message.js"
import { PageResponse } from "./page-response.js"

export const queryOf = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => new URL(request.url, "http://gateway")
)

/** One query parameter given once, or undefined. */
export const single = (url: URL, name: string) => {
  const found = OAuthParams.fromSearch(url.searchParams).single(name)
  return found._tag === "Value" ? found.value : undefined
}

export const page = (title: string, text: string, status: number) =>
  new PageResponse({ response: messagePage(title, text, status) })
