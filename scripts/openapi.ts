/**
 * Writes the Management API's OpenAPI document, generated from its HttpApi definition
 * (src/admin/api.ts), to docs/api/openapi.json: `npm run openapi`. A test checks that the committed
 * file is current and that the gateway serves the same document at /api/v1/openapi.json.
 */
import { writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { openApiDocument } from "../src/admin/openapi.js"

const target = resolve(import.meta.dirname, "../docs/api/openapi.json")
writeFileSync(target, `${JSON.stringify(openApiDocument(), null, 2)}\n`)
process.stdout.write(`wrote ${target}\n`)
