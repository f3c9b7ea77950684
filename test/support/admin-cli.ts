import { freePort, newConfigKey, runGatewayCommand, startGateway } from "./gateway-process.js"
import { Browser, exchange, obtainCode } from "./oauth-client.js"
import { ADMIN_PASSWORD } from "./oauth-gateway.js"

/**
 * A spawned gateway (SQLite, loopback admin listener, the `gateway-admin` client) whose built-in
 * administrator exists, and a Management API token obtained the real way: what `gateway admin …`
 * tests run their commands against, with the token as a script would pass it
 * (`GATEWAY_ADMIN_TOKEN`). `stop` ends the gateway.
 */
export const adminCliGateway = async () => {
  const port = await freePort()
  const adminPort = await freePort()
  const adminUrl = `http://127.0.0.1:${adminPort}`
  const env = { GATEWAY_CONFIG_KEY: newConfigKey() }
  const gateway = await startGateway({
    port,
    env,
    config: (dir) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth:
  issuer: "http://127.0.0.1:${port}/sso"
  sso:
    clients:
      - { id: gateway-admin, redirect_uris: ["http://127.0.0.1/callback"], resources: ["${adminUrl}"] }
storage: { type: sqlite, path: "${dir}/gateway.db" }
admin: { listen: "127.0.0.1:${adminPort}" }
`
  })
  const config = ["--config", gateway.configFile]
  const created = await runGatewayCommand(["init-admin", ...config, "--password-stdin"], {
    env,
    stdin: `${ADMIN_PASSWORD}\n`
  })
  if (created.code !== 0) {
    await gateway.stop()
    throw new Error(`init-admin exited ${created.code}`)
  }
  const obtained = await obtainCode(new Browser(gateway.baseUrl), {
    clientId: "gateway-admin",
    redirectUri: "http://127.0.0.1:50001/callback",
    scope: "gateway:admin",
    resource: adminUrl,
    totp: {},
    nowMs: Date.now()
  })
  const token = String((await exchange(gateway.baseUrl, obtained)).body["access_token"])
  /** `gateway <args> --config <file>` with the token in the environment. */
  const run = (args: ReadonlyArray<string>, stdin?: string) =>
    runGatewayCommand([...args, ...config], {
      env: { ...env, GATEWAY_ADMIN_TOKEN: token },
      ...(stdin === undefined ? {} : { stdin })
    })
  return { gateway, adminUrl, env, config, token, run }
}
