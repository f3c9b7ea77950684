import { McpServer } from "@modelcontextprotocol/server"
import * as z from "zod/v4"

/**
 * The demo backend `npm start` serves behind the gateway: a tiny in-memory notes service with read
 * tools (list, read, search) and write tools (create, delete), a prompt and a resource per note.
 * Not part of the gateway; it exists so a newcomer sees real tools through /mcp.
 */
export interface Note {
  readonly id: string
  readonly title: string
  readonly body: string
}

export const makeNotesStore = () => {
  const notes = new Map<string, Note>([
    ["1", { id: "1", title: "Welcome", body: "This note comes from the demo backend, through the gateway." }],
    ["2", { id: "2", title: "Next steps", body: "Read docs/mcp.md to connect your own MCP servers." }]
  ])
  let next = 3
  return {
    list: () => [...notes.values()],
    get: (id: string) => notes.get(id),
    add: (title: string, body: string) => {
      const note = { id: String(next++), title, body }
      notes.set(note.id, note)
      return note
    },
    remove: (id: string) => notes.delete(id)
  }
}

export type NotesStore = ReturnType<typeof makeNotesStore>

/** The demo's tools and prompts by name (the development setup grants them: src/demo/dev-access.ts). */
export const demoTools = ["list_notes", "read_note", "search_notes", "create_note", "delete_note"] as const
export const demoPrompts = ["summarize_notes"] as const

const json = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value, null, 2) }] })

export const notesServer = (store: NotesStore): McpServer => {
  const server = new McpServer({ name: "demo-notes", version: "1.0.0" })
  server.registerTool(
    "list_notes",
    { description: "List every note (id and title)", annotations: { readOnlyHint: true } },
    async () => json(store.list().map(({ id, title }) => ({ id, title })))
  )
  server.registerTool(
    "read_note",
    { description: "Read one note", inputSchema: z.object({ id: z.string() }), annotations: { readOnlyHint: true } },
    async ({ id }) => {
      const note = store.get(id)
      return note === undefined ? { ...json({ error: `no note ${id}` }), isError: true } : json(note)
    }
  )
  server.registerTool(
    "search_notes",
    {
      description: "Find notes whose title or body contains a text",
      inputSchema: z.object({ text: z.string() }),
      annotations: { readOnlyHint: true }
    },
    async ({ text }) =>
      json(store.list().filter((note) => `${note.title} ${note.body}`.toLowerCase().includes(text.toLowerCase())))
  )
  server.registerTool(
    "create_note",
    { description: "Create a note", inputSchema: z.object({ title: z.string(), body: z.string() }) },
    async ({ title, body }) => json(store.add(title, body))
  )
  server.registerTool(
    "delete_note",
    { description: "Delete a note", inputSchema: z.object({ id: z.string() }), annotations: { destructiveHint: true } },
    async ({ id }) => json({ deleted: store.remove(id) })
  )
  server.registerPrompt("summarize_notes", { description: "Ask the model to summarize every note" }, () => ({
    messages: [
      {
        role: "user",
        content: { type: "text", text: `Summarize these notes:\n${JSON.stringify(store.list(), null, 2)}` }
      }
    ]
  }))
  return server
}
