// Types of @scribe/session-store. They restate the Claude Agent SDK's
// SessionStore types structurally (the package has no dependencies), so a
// ScribeSessionStore is assignable to the SDK's SessionStore.

export type SessionKey = { projectKey: string; sessionId: string; subpath?: string };

export type SessionStoreEntry = { type: string; uuid?: string; timestamp?: string; [k: string]: unknown };

export type SessionSummaryEntry = { sessionId: string; mtime: number; data: Record<string, unknown> };

/** The SDK's foldSessionSummary. */
export type FoldSessionSummary = (
  prev: SessionSummaryEntry | undefined,
  key: SessionKey,
  entries: SessionStoreEntry[],
  options?: { mtime?: number },
) => SessionSummaryEntry;

export type ScribeSessionStoreOptions = {
  /** scribe serve's URL, e.g. http://127.0.0.1:8787 (a path prefix is kept). */
  baseUrl: string;
  /** A bearer token of the tenant (read and write scopes). */
  token: string;
  /** The SDK's foldSessionSummary: with it the store keeps a summary per
   *  session (compare-and-set on the server) and has listSessionSummaries. */
  foldSessionSummary?: FoldSessionSummary;
  /** Per request. Default 30000. */
  timeoutMs?: number;
  /** Attempts after the first for what is safe to send again. Default 3. */
  retries?: number;
  /** An append larger than this is sent in parts; an entry larger fails it (413). Default 8 MiB, the server's default max_body_bytes. */
  maxRequestBytes?: number;
  fetch?: typeof globalThis.fetch;
};

/** An error answer of scribe serve, or no answer (lost: true). */
export declare class ScribeStoreError extends Error {
  /** The HTTP status; 0 when there was no answer. */
  status: number;
  /** The server's error type: invalid_request_error, conflict_error, … */
  type: string;
  /** The request may or may not have been applied. */
  lost: boolean;
}

export declare class ScribeSessionStore {
  constructor(options: ScribeSessionStoreOptions);
  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void>;
  load(key: SessionKey): Promise<SessionStoreEntry[] | null>;
  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>>;
  /** Present only when foldSessionSummary was given. */
  listSessionSummaries?(projectKey: string): Promise<SessionSummaryEntry[]>;
  delete(key: SessionKey): Promise<void>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
}
