/**
 * A mistyped or missing command word is named with the words that would do, at the level it belongs to
 * (src/cli/command-group.ts): @effect/cli alone blames the top-level command for any of them. And the
 * help lists nested commands as they are typed.
 */
import { describe, expect, it } from "vitest"
import { unknownCommand } from "../../src/cli/command-group.js"
import { rootCommand } from "../../src/cli/run.js"
import { runGatewayCommand } from "../support/gateway-process.js"

const root = rootCommand()
const check = (line: string) => unknownCommand(root, "gateway", line === "" ? [] : line.split(" "))
const userActions = "list, show, create, disable, enable, reset-password, reset-mfa"

describe("command words", () => {
  it("a wrong word is named at its own level, with the words expected there; a missing one likewise", () => {
    expect(check("admin users frobnicate")).toBe(
      `gateway admin users: no command 'frobnicate'; expected one of: ${userActions}`
    )
    expect(check("admin frobnicate list")).toBe(
      "gateway admin: no command 'frobnicate'; expected one of: users, directory, backends, http-tools, openapi-imports, tool-groups, proposals"
    )
    expect(check("frobnicate")).toMatch(/^gateway: no command 'frobnicate'; expected one of: serve, validate, /)
    expect(check("admin users")).toBe(`gateway admin users: a command is missing; expected one of: ${userActions}`)
    expect(check("admin")).toMatch(/^gateway admin: a command is missing; expected one of: users, directory, /)
  })

  it("a whole command, options, --help and no words at all are left to the command line parser", () => {
    for (const line of [
      "",
      "admin users list --limit 5",
      "admin users show 123",
      "admin --help",
      "admin users --help",
      "--version",
      "serve --config x.yaml",
      "admin directory reset-version oidc --if-match 3"
    ]) {
      expect(check(line), line).toBeUndefined()
    }
  })

  it("a hostile word is shown escaped and cut, never as terminal control sequences", () => {
    const problem = check(`admin \u001b[31mred\u0007${"x".repeat(100)}`)!
    expect(problem).toContain("no command '\\u001b[31mred\\u0007")
    expect(problem).not.toContain("\u001b")
    expect(problem).toContain(`${"x".repeat(54)}...'`)
  })

  it("the executable exits 2 with that message on stderr (and so with the parser's own usage errors), and its help lists `admin users list` once", async () => {
    const wrong = await runGatewayCommand(["admin", "users", "frobnicate"])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toBe(
      `gateway admin users: no command 'frobnicate'; expected one of: ${userActions}\n(gateway --help lists every command with its options)\n`
    )
    expect(wrong.stdout).toBe("")
    // A usage error the command line parser finds reads the same way.
    const missing = await runGatewayCommand(["admin", "users", "show"])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toBe(
      "gateway: Missing argument <id>\n(gateway --help lists every command with its options)\n"
    )
    const help = await runGatewayCommand(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}- admin users list \[--config file\]/m)
    expect(help.stdout).not.toContain("admin admin")
    // Every description starts in one column, nested commands' too.
    const column = (line: string) => /^ {2}- \S.*? {2,}(?=\S)/.exec(line)?.[0].length
    const lines = help.stdout.split("\n")
    const serve = lines.find((line) => line.startsWith("  - serve "))!
    const nested = lines.find((line) => line.startsWith("  - admin users list "))!
    expect(column(nested)).toBe(column(serve))
  })
})
