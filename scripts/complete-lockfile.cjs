// Adds lockfile entries for other platforms' optional native packages (never installed here).
// Why: the registry this project installs from serves only the linux-x64 builds of some packages, so
// `npm install` leaves them out of package-lock.json, and `npm ci` then refuses the lock as out of sync.
// Run `node scripts/complete-lockfile.cjs` after every `npm install` that changes the lock.
const fs = require("node:fs")
const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"))
const pk = lock.packages
let added = 0
for (const entry of Object.values(pk)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`
    if (pk[key]) continue
    if (!/^\d+\.\d+\.\d+/.test(spec)) {
      console.error("non-exact", name, spec)
      continue
    }
    const os = /android/.test(name)
      ? ["android"]
      : /darwin/.test(name)
        ? ["darwin"]
        : /win32/.test(name)
          ? ["win32"]
          : /freebsd/.test(name)
            ? ["freebsd"]
            : /openbsd/.test(name)
              ? ["openbsd"]
              : /netbsd/.test(name)
                ? ["netbsd"]
                : /sunos/.test(name)
                  ? ["sunos"]
                  : /aix/.test(name)
                    ? ["aix"]
                    : /openharmony/.test(name)
                      ? ["openharmony"]
                      : /linux/.test(name)
                        ? ["linux"]
                        : undefined
    const cpu = /arm64|aarch64/.test(name)
      ? ["arm64"]
      : /arm-|armv7|-arm$|arm-eabi|arm-gnueabihf|arm-musleabihf/.test(name)
        ? ["arm"]
        : /ia32|x86\b|-x86-|i386/.test(name)
          ? ["ia32"]
          : /riscv64/.test(name)
            ? ["riscv64"]
            : /ppc64/.test(name)
              ? ["ppc64"]
              : /s390x/.test(name)
                ? ["s390x"]
                : /loong64|loongarch64/.test(name)
                  ? ["loong64"]
                  : /mips64el/.test(name)
                    ? ["mips64el"]
                    : /x64/.test(name)
                      ? ["x64"]
                      : undefined
    const libc = /musl/.test(name) ? ["musl"] : /gnu/.test(name) && os?.[0] === "linux" ? ["glibc"] : undefined
    const e = { version: spec, optional: true }
    if (entry.dev) e.dev = true
    if (os) e.os = os
    if (cpu) e.cpu = cpu
    if (libc) e.libc = libc
    pk[key] = e
    added++
    console.log("added", key, spec, os, cpu, libc)
  }
}
const sorted = {}
for (const k of Object.keys(pk).sort((a, b) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b)))) sorted[k] = pk[k]
lock.packages = sorted
fs.writeFileSync("package-lock.json", JSON.stringify(lock, null, 2) + "\n")
console.error("added", added)
