import { spawn } from "node:child_process"
import { isPlainAddress } from "./discovery.js"

/**
 * The program and arguments that open `url` in the person's browser on `platform`, run without a shell
 * (docs/clients.md, "The bridge"): `open` on macOS, `rundll32 url.dll,FileProtocolHandler` on Windows
 * (not `cmd /c start`, whose command line would read `%VAR%`, `&`, `|` and `^` in the address), and
 * `xdg-open` elsewhere. `undefined` for an address that is not plain http(s) ({@link isPlainAddress}):
 * such an address is only printed, never handed to another program.
 */
export const browserCommand = (
  platform: NodeJS.Platform,
  url: string
): readonly [string, ReadonlyArray<string>] | undefined => {
  if (!/^https?:\/\//.test(url) || !isPlainAddress(url)) return undefined
  switch (platform) {
    case "darwin":
      return ["open", [url]]
    case "win32":
      return ["rundll32", ["url.dll,FileProtocolHandler", url]]
    default:
      return ["xdg-open", [url]]
  }
}

/** Opens `url` in the person's browser, best effort: the address is on standard error as well. */
export const openBrowser = (url: string): void => {
  const command = browserCommand(process.platform, url)
  if (command === undefined) return
  try {
    const child = spawn(command[0], command[1], { detached: true, stdio: "ignore", shell: false })
    child.on("error", () => {})
    child.unref()
  } catch {
    // No opener here (a server, a container): the person opens the printed address.
  }
}
