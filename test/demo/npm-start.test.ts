/**
 * `npm start` is one Node process under npm that owns the gateway and the demo backend, run from the
 * bundle (dist/demo.js) rather than through tsx (README, "Quick start"): SIGHUP to it reloads, SIGTERM to
 * npm drains and exits with the gateway's code, and npm dying of a signal it does not forward takes the
 * gateway with it. `npm run dev` is the same from the sources, through tsx. Run for real: npm, signals,
 * ports. `npm start` runs in a project of its own whose dist/ is this run's bundle (the checkout's dist/
 * may be older than the sources), with the checkout's package.json; its `prestart` (a rebuild of a
 * stale dist/) is tested in test/project/build.test.ts.
 */
import { type ChildProcess, spawn } from "node:child_process"
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { connect, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { freePort, gatewayBundleDirectory, newConfigKey } from "../support/gateway-process.js"

const root = resolve(import.meta.dirname, "../..")

interface Started {
  readonly npm: ChildProcess
  readonly ports: { readonly gateway: number; readonly admin: number; readonly demo: number }
  readonly exited: Promise<number | null>
  stderr(): string
  waitFor(text: string, from?: number): Promise<void>
}

const running: Array<{ started: Started; dir: string }> = []
afterEach(() => {
  for (const { started, dir } of running.splice(0)) {
    for (const pid of tree(started.npm.pid!)) kill(pid, "SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * A project whose package.json is the checkout's and whose dist/ is this run's bundle, for `npm start`:
 * what `npm ci` leaves in a fresh clone, as far as `npm start` reads it.
 */
const bundledProject = (dir: string): string => {
  const project = join(dir, "project")
  mkdirSync(project)
  copyFileSync(join(root, "package.json"), join(project, "package.json"))
  symlinkSync(gatewayBundleDirectory(), join(project, "dist"))
  symlinkSync(join(root, "node_modules"), join(project, "node_modules"))
  return project
}

/**
 * `npm start` (or `npm run dev`, from the checkout's sources) on free ports (the demo's: `demoPort` when
 * given), resolved once it serves (`serving: false`: at once). `underSleep`: npm is started by a shell
 * that then becomes `sleep` (`exec`), a parent that never reaps it: `Started.npm` is that parent.
 */
const start = async (
  options: {
    readonly demoPort?: number
    readonly serving?: boolean
    readonly script?: "start" | "dev"
    readonly underSleep?: boolean
    /** The port the file's `demo` backend names, when not the demo's own. */
    readonly demoUrlPort?: number
  } = {}
): Promise<Started> => {
  const ports = { gateway: await freePort(), admin: await freePort(), demo: options.demoPort ?? (await freePort()) }
  const dir = mkdtempSync(join(tmpdir(), "gateway-npm-start-"))
  const configFile = join(dir, "gateway.yaml")
  writeFileSync(
    configFile,
    `
server:
  listen: 127.0.0.1:${ports.gateway}
  public_url: http://127.0.0.1:${ports.gateway}/mcp
auth:
  issuer: http://127.0.0.1:${ports.gateway}/sso
storage:
  type: sqlite
  path: ${dir}/gateway.db
admin:
  listen: 127.0.0.1:${ports.admin}
backends:
  - id: demo
    url: http://127.0.0.1:${options.demoUrlPort ?? ports.demo}/mcp
    allow_insecure_http: true
    tool_rules:
      - tools: ["*"]
`
  )
  const startOptions = ["--", "--config", configFile, "--demo-port", String(ports.demo)]
  // --ignore-scripts: `start` without its `prestart`, which would look for sources to rebuild from.
  const [args, cwd] =
    options.script === "dev"
      ? [["run", "dev", ...startOptions], root]
      : [["start", "--ignore-scripts", ...startOptions], bundledProject(dir)]
  // GATEWAY_CONFIG_KEY set: --dev then writes no data/dev-config.key into the working directory.
  const [file, argv] = options.underSleep ? ["sh", ["-c", 'npm "$@" & exec sleep 120', "sh", ...args]] : ["npm", args]
  const npm = spawn(file, argv, {
    cwd,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "/tmp",
      GATEWAY_CONFIG_KEY: newConfigKey(),
      npm_config_update_notifier: "false"
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stderr = ""
  const waiters = new Set<() => void>()
  npm.stderr!.on("data", (chunk) => {
    stderr += chunk
    for (const waiter of waiters) waiter()
  })
  npm.stdout!.resume()
  const exited = new Promise<number | null>((done) => npm.on("exit", (code) => done(code)))
  const waitFor = (text: string, from = 0) =>
    new Promise<void>((done, fail) => {
      const check = () => {
        if (stderr.indexOf(text, from) < 0) return
        waiters.delete(check)
        clearTimeout(timer)
        done()
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        fail(new Error(`timed out waiting for "${text}" from npm start:\n${stderr}`))
      }, 60_000)
      waiters.add(check)
      check()
    })
  const started: Started = { npm, ports, exited, stderr: () => stderr, waitFor }
  running.push({ started, dir })
  if (options.serving === false) return started
  await Promise.race([
    waitFor("gateway serving"),
    exited.then((code) => {
      throw new Error(`npm start exited with ${code} before serving:\n${stderr}`)
    })
  ])
  return started
}

/** A pid and all its descendants, read from /proc. */
const tree = (pid: number): Array<number> => {
  const children = (parent: number): Array<number> => {
    try {
      return readdirSync(`/proc/${parent}/task`).flatMap((task) =>
        readFileSync(`/proc/${parent}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number)
      )
    } catch {
      return []
    }
  }
  return [pid, ...children(pid).flatMap(tree)]
}

/** Still running: exists and is not a zombie waiting to be reaped. */
const runs = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

const kill = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

const command = (pid: number): Array<string> => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean)
  } catch {
    return []
  }
}

const accepts = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      done(true)
    })
    socket.once("error", () => done(false))
  })

const eventually = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000) => {
  const end = Date.now() + timeoutMs
  while (!(await check()) && Date.now() < end) await new Promise((done) => setTimeout(done, 100))
  return check()
}

/**
 * Nothing of `pids` runs and no port accepts. Both are polled: a process whose parent is gone is reaped
 * by init, and its leader shows as a zombie while its other threads, which still hold the sockets, exit.
 */
const allGone = (pids: ReadonlyArray<number>, ports: ReadonlyArray<number>) =>
  eventually(async () => pids.every((pid) => !runs(pid)) && !(await Promise.all(ports.map(accepts))).some(Boolean))

/** Something else listening on a free loopback port (it closes every connection at once). */
const squatting = () => {
  const server = createServer((socket) => socket.destroy())
  return new Promise<{ readonly server: typeof server; readonly port: number }>((done) =>
    server.listen(0, "127.0.0.1", () => done({ server, port: (server.address() as { port: number }).port }))
  )
}

/** The one Node process under npm (failing the test when there is none or more than one). */
const onlyNode = (npmPid: number): number => {
  const descendants = tree(npmPid).filter((pid) => pid !== npmPid && command(pid)[0] !== undefined)
  const nodes = descendants.filter((pid) => /(^|\/)node$/.test(command(pid)[0]!))
  expect(nodes).toHaveLength(1)
  return nodes[0]!
}

describe("npm start", () => {
  it("is one Node process under npm running the bundle (dist/demo.js, no tsx) with the gateway and the demo; SIGHUP to it reloads; SIGTERM to npm leaves nothing running or listening", async () => {
    const started = await start()
    const { ports } = started
    const npmPid = started.npm.pid!
    // npm's only child is node itself, running the bundle: no shell, no tsx launcher or compiler service.
    const gatewayPid = onlyNode(npmPid)
    expect(command(gatewayPid).slice(1, 3)).toEqual(["dist/demo.js", "--config"])
    expect(tree(npmPid).some((pid) => command(pid).some((arg) => /(^|\/)tsx(\/|$)/.test(arg)))).toBe(false)
    expect(readFileSync(`/proc/${gatewayPid}/stat`, "utf8").split(") ")[1]!.split(" ")[1]).toBe(String(npmPid))
    expect(await accepts(ports.demo)).toBe(true)
    expect((await fetch(`http://127.0.0.1:${ports.gateway}/readyz`)).status).toBe(200)

    const from = started.stderr().length
    process.kill(gatewayPid, "SIGHUP")
    await started.waitFor('"msg":"reloaded"', from)
    expect(runs(gatewayPid)).toBe(true)

    const everything = tree(npmPid)
    started.npm.kill("SIGTERM")
    expect(await started.exited).toBe(0)
    expect(started.stderr()).toContain('"msg":"stopped"')
    expect(await allGone(everything, [ports.gateway, ports.admin, ports.demo])).toBe(true)
  }, 120_000)

  it("npm run dev runs the same from the sources through tsx, as one Node process that SIGTERM to npm stops with exit code 0", async () => {
    const started = await start({ script: "dev" })
    const npmPid = started.npm.pid!
    // esbuild, tsx's compiler service, is a child of that node, not a second Node process.
    const gatewayPid = onlyNode(npmPid)
    expect(command(gatewayPid).slice(1, 4)).toEqual(["--import", "tsx", "src/demo/start.ts"])
    expect((await fetch(`http://127.0.0.1:${started.ports.gateway}/readyz`)).status).toBe(200)
    const everything = tree(npmPid)
    started.npm.kill("SIGTERM")
    expect(await started.exited).toBe(0)
    expect(await allGone(everything, Object.values(started.ports))).toBe(true)
  }, 120_000)

  it("stops the gateway when npm dies of a signal it does not forward (SIGHUP)", async () => {
    const started = await start()
    const everything = tree(started.npm.pid!)
    started.npm.kill("SIGHUP")
    await started.exited
    expect(await allGone(everything, Object.values(started.ports))).toBe(true)
    expect(started.stderr()).toContain('"signal":"SIGTERM"')
  }, 120_000)

  it("stops the gateway when npm is killed (SIGKILL) and lingers as a zombie its own parent does not reap", async () => {
    const started = await start({ underSleep: true })
    const sleeper = started.npm.pid!
    // The shell's only child, npm (whose own child is the gateway's Node process).
    const npmPid = tree(sleeper)[1]
    expect(npmPid).toBeDefined()
    expect(onlyNode(npmPid!)).toBeGreaterThan(0)
    const everything = tree(npmPid!)
    const from = started.stderr().length
    kill(npmPid!, "SIGKILL")
    await started.waitFor('"msg":"shutting down"', from)
    expect(
      await allGone(
        everything.filter((pid) => pid !== npmPid),
        Object.values(started.ports)
      )
    ).toBe(true)
    // npm is still there, dead but not reaped: the gateway did not wait for that.
    expect(readFileSync(`/proc/${npmPid}/stat`, "utf8").split(") ")[1]![0]).toBe("Z")
  }, 120_000)

  it("refuses to start (exit 2, before the demo listens) when the file's demo backend points at another port than --demo-port", async () => {
    const { server: elsewhere, port: other } = await squatting()
    try {
      const started = await start({ demoUrlPort: other, serving: false })
      expect(await started.exited).toBe(2)
      expect(started.stderr()).toContain(
        `the \`demo\` backend points at http://127.0.0.1:${other}/mcp, but the demo notes backend starts on http://127.0.0.1:${started.ports.demo}/mcp (--demo-port ${started.ports.demo})`
      )
      expect(started.stderr()).not.toContain("gateway serving")
      expect(await accepts(started.ports.demo)).toBe(false)
      expect(await accepts(started.ports.gateway)).toBe(false)
    } finally {
      elsewhere.close()
    }
  }, 120_000)

  it("refuses to start when the demo backend's port is taken, rather than connect the demo backend to whatever listens there", async () => {
    const { server: squatter, port } = await squatting()
    try {
      const started = await start({ demoPort: port, serving: false })
      expect(await started.exited).toBe(1)
      expect(started.stderr()).toContain(
        `the demo notes backend cannot listen on 127.0.0.1:${port}: the port is in use`
      )
      expect(started.stderr()).toContain("--demo-port")
      expect(started.stderr()).not.toContain("gateway serving")
      expect(await accepts(started.ports.gateway)).toBe(false)
    } finally {
      squatter.close()
    }
  }, 120_000)
})
