import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url))

/** The compiled bin, which is what the image and `npm install -g` run, not the tsx development path. */
export const gatewayEntry = fileURLToPath(new URL("../../dist/main.js", import.meta.url))

let built: Promise<string> | undefined

const runBuild = () =>
  new Promise<string>((resolve, reject) => {
    // The compiler's output goes to stderr so stdout stays pure markdown.
    const child = spawn("npm", ["run", "--silent", "build"], { cwd: projectRoot, stdio: ["ignore", 2, 2] })
    child.once("error", reject)
    child.once("exit", (code) =>
      code === 0
        ? resolve(gatewayEntry)
        : reject(new Error(`npm run build failed (exit ${code}); not benchmarking stale code`))
    )
  })

/** Builds once per bench run, so every suite measures the current source. */
export const ensureBuilt = (): Promise<string> => {
  built ??= runBuild()
  return built
}
