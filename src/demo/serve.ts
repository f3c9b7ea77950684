import { createMcpHandler } from "@modelcontextprotocol/server"
import { serveFetch } from "./http-bridge.js"
import { makeNotesStore, notesServer } from "./notes-server.js"

/** Where `config/gateway.yaml`'s `demo` backend points. */
export const demoHost = "127.0.0.1"
export const demoPort = 8090

/** Starts the demo notes backend; resolves once it listens (rejects if the port is taken). */
export const startDemoBackend = (port = demoPort) => {
  const store = makeNotesStore()
  const handler = createMcpHandler(() => notesServer(store))
  return serveFetch(handler.fetch, demoHost, port)
}
