/**
 * The error codes are a closed list (src/http/error-codes.ts) and docs/errors.md documents exactly that
 * list: a code added in the code without a line in the docs, or documented but never produced, fails.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { errorCodes } from "../../src/http/error-codes.js"

const docs = readFileSync(resolve(import.meta.dirname, "../../docs/errors.md"), "utf8")

/** The backticked codes of the `error` column of every table row whose first cell is a status. */
const documented = () => {
  const codes = new Set<string>()
  for (const line of docs.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim())
    if (cells.length < 4 || !/^(\d{3}|redirect)$/.test(cells[1] ?? "")) continue
    for (const match of (cells[2] ?? "").matchAll(/`([a-z_]+)`/g)) codes.add(match[1]!)
  }
  return codes
}

describe("error codes", () => {
  it("docs/errors.md documents every code the gateway produces, and no other", () => {
    expect([...documented()].sort()).toEqual([...new Set(errorCodes)].sort())
  })
})
