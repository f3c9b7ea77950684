import { createHash } from "node:crypto"
import { Either } from "effect"
import { isRecord } from "../json.js"
import { configured, type Json, mapSecrets } from "./definitions.js"
import type { SourceKind } from "./schema.js"

export interface DiffEntry {
  readonly path: string
  readonly before: unknown
  readonly after: unknown
}

/** Diffs longer than this end with one entry saying how many more there were. */
const MAX_ENTRIES = 500

const escapeKey = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1")

/** Leaves by JSON Pointer; an OpenAPI document is one leaf, named by its SHA-256. */
const flatten = (value: unknown, path: string, into: Map<string, unknown>) => {
  if (path === "/source/document") {
    into.set(path, `sha256:${createHash("sha256").update(JSON.stringify(value)).digest("hex")}`)
    return
  }
  if (Array.isArray(value) && value.length > 0) {
    for (const [index, item] of value.entries()) flatten(item, `${path}/${index}`, into)
  } else if (isRecord(value) && Object.keys(value).length > 0) {
    for (const [key, item] of Object.entries(value)) flatten(item, `${path}/${escapeKey(key)}`, into)
  } else into.set(path, value)
}

const secretsOf = (kind: SourceKind, definition: Json | undefined) => {
  const secrets = new Map<string, unknown>()
  if (definition !== undefined) {
    mapSecrets(kind, definition, (value, pointer) => {
      secrets.set(pointer, value)
      return Either.right(value)
    })
  }
  return secrets
}

/**
 * What a proposal changes against the active definition (undefined: a create), leaf by leaf. Secrets are
 * never shown: each side is `{"configured": true}` or absent, and a changed secret is listed with
 * `"changed": true` after.
 */
export const diffDefinitions = (kind: SourceKind, before: Json | undefined, after: Json): ReadonlyArray<DiffEntry> => {
  const beforeSecrets = secretsOf(kind, before)
  const afterSecrets = secretsOf(kind, after)
  const mask = (definition: Json) => Either.getOrThrow(mapSecrets(kind, definition, () => Either.right(configured)))
  const left = new Map<string, unknown>()
  const right = new Map<string, unknown>()
  if (before !== undefined) flatten(mask(before), "", left)
  flatten(mask(after), "", right)
  const entries: Array<DiffEntry> = []
  const paths = [...new Set([...left.keys(), ...right.keys()])].sort()
  for (const path of paths) {
    const secretPath = [...afterSecrets.keys(), ...beforeSecrets.keys()].find((pointer) => path.startsWith(pointer))
    if (secretPath !== undefined) {
      if (path !== `${secretPath}/configured`) continue
      const had = beforeSecrets.has(secretPath)
      const has = afterSecrets.has(secretPath)
      if (had && has && beforeSecrets.get(secretPath) === afterSecrets.get(secretPath)) continue
      entries.push({
        path: secretPath,
        before: had ? configured : null,
        after: has ? { ...configured, changed: true } : null
      })
      continue
    }
    const was = left.get(path)
    const is = right.get(path)
    if (JSON.stringify(was) !== JSON.stringify(is)) entries.push({ path, before: was ?? null, after: is ?? null })
  }
  if (entries.length <= MAX_ENTRIES) return entries
  return [
    ...entries.slice(0, MAX_ENTRIES),
    { path: "", before: null, after: `${entries.length - MAX_ENTRIES} more changes not listed` }
  ]
}
