/**
 * How `gateway connect` opens the sign-in page (docs/clients.md, "The bridge"): a program and its
 * arguments per platform, never a shell — on Windows `rundll32 url.dll,FileProtocolHandler`, not
 * `cmd /c start`, whose command line reads `%VAR%`, `&`, `|` and `^` — and nothing at all for an address
 * that is not plain http(s).
 */
import { describe, expect, it } from "vitest"
import { browserCommand } from "../../src/connect/browser.js"

const signIn =
  "https://gateway.example.com/sso/authorize?client_id=gateway-cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A50123%2Fcallback&state=abc"

describe("gateway connect: opening the browser", () => {
  it("runs one opener per platform with the address as a single argument", () => {
    expect(browserCommand("win32", signIn)).toEqual(["rundll32", ["url.dll,FileProtocolHandler", signIn]])
    expect(browserCommand("darwin", signIn)).toEqual(["open", [signIn]])
    expect(browserCommand("linux", signIn)).toEqual(["xdg-open", [signIn]])
    expect(browserCommand("freebsd", signIn)).toEqual(["xdg-open", [signIn]])
  })

  it("never involves cmd.exe on Windows, whatever the address", () => {
    const [command] = browserCommand("win32", `${signIn}&next=a%20b`) ?? []
    expect(command).toBe("rundll32")
  })

  it.each([
    ["an environment variable", "https://gateway.example.com/sso/authorize?x=%PATH%"],
    ["a pipe", "https://gateway.example.com/sso/authorize?x=1|calc"],
    ["a caret", "https://gateway.example.com/sso/auth^orize"],
    ["a double quote", 'https://gateway.example.com/sso/authorize?x="'],
    ["angle brackets", "https://gateway.example.com/sso/authorize?x=<y>"],
    ["a backtick", "https://gateway.example.com/sso/authorize?x=`id`"],
    ["whitespace", "https://gateway.example.com/sso/authorize?x=a b"],
    ["another scheme", "file:///etc/passwd"],
    ["an option instead of an address", "--help"]
  ])("opens nothing for an address with %s", (_, url) => {
    for (const platform of ["win32", "darwin", "linux"] as const) expect(browserCommand(platform, url)).toBeUndefined()
  })
})
