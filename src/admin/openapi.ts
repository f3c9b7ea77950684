import { OpenApi } from "@effect/platform"
import { ManagementApi } from "./api.js"

/** The Management API's OpenAPI 3.1 document, generated from its HttpApi definition. */
export const openApiDocument = () => OpenApi.fromApi(ManagementApi)
