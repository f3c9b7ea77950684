import type { Server as HttpServer } from "node:http"
import type { Server as HttpsServer } from "node:https"

/** A loopback server that can go down and come back on the same port (a backend or issuer that restarts). */
export interface Restartable {
  readonly port: number
  /** Closes the server and every connection it holds. */
  stop(): Promise<void>
  /** Listens again on the same port, with a fresh server from the same factory. */
  start(): Promise<void>
}

/** Listens on 127.0.0.1:`port` (0: any free one) with a server from `create`. */
export const listenRestartable = async (create: () => HttpServer | HttpsServer, port = 0): Promise<Restartable> => {
  let server: HttpServer | HttpsServer | undefined
  const listen = (at: number) =>
    new Promise<number>((done, failed) => {
      const created = create()
      created.once("error", failed)
      created.listen(at, "127.0.0.1", () => {
        server = created
        const address = created.address()
        done(typeof address === "object" && address !== null ? address.port : at)
      })
    })
  const bound = await listen(port)
  return {
    port: bound,
    stop: () =>
      new Promise<void>((done) => {
        const current = server
        server = undefined
        if (current === undefined) return done()
        current.close(() => done())
        current.closeAllConnections()
      }),
    start: async () => {
      if (server === undefined) await listen(bound)
    }
  }
}
