import type { HttpEndpoint, HttpToolSpec } from "../schema.js"

/** One problem with an HTTP tool's definition: where (a JSON Pointer into the tool) and what. */
export interface SpecProblem {
  readonly pointer: string
  readonly message: string
}

/**
 * The save-time checks of an HTTP tool (the Management API and the OpenAPI importer run them): the URL
 * template, its literal origin, the input schema, the body and header pointers. Empty: valid.
 */
export const checkHttpTool = (
  _endpoint: Pick<HttpEndpoint, "allow_insecure_http">,
  _spec: HttpToolSpec
): ReadonlyArray<SpecProblem> => [{ pointer: "", message: "HTTP tools are not available in this build" }]
