# scribe configuration (HCL2). This file is also scribe's built-in default.
#
# Every top-level setting can be overridden by an environment variable,
# SCRIBE_ + its name in upper case (pipeline settings: SCRIBE_PIPELINE_...),
# and by a flag of the same name with '-' for '_' (--log-level).
# Precedence: flag > environment > a --config file (only what it changes) > this file.

# Claude Code's config folder. Empty: $CLAUDE_CONFIG_DIR, else ~/.claude.
# Default: "".
config_dir = ""

# Days Claude Code keeps transcripts. 0 disables persistence (the "config"
# guard refuses everything), as Claude Code's cleanupPeriodDays = 0 once did.
# Default: 30.
cleanup_period_days = 30

# How much scribe logs: trace|debug|info|warn|error|off. Default: "info".
log_level = "info"

# Write log lines as JSON instead of text. Default: false.
log_json = false

pipeline {
  # Sinks every accepted entry is written to, in order, as "type/name" of a
  # sink block below. Default: [] (none).
  sinks = ["jsonl/local"]

  # Guards every entry must pass before any sink sees it, in order, as
  # "type/name" of a guard block below. Default: [] (none).
  guards = ["env/default", "flag/default", "config/default"]

  # Processors every entry goes through after the guards, in order, as
  # "type/name" of a processor block: each returns a changed copy of the
  # entry or drops it with a reason (counted). Default: [] (none).
  processors = []

  # Entries per sink queue. Each sink has its own queue and goroutine: a
  # slow or failing sink never blocks another. Default: 4096.
  queue_size = 4096

  # When a sink's queue is full, an entry waits this long for room; then it
  # is dropped for that sink only (counted, and acknowledgements stop before
  # it), and the sink is marked stalled: later entries are dropped for it at
  # once until its queue is half empty again. Default: "5s".
  overflow_wait = "5s"

  # Sinks whose full queue drops entries at once instead of waiting (a
  # memory cache, say). Default: [] (none).
  drop_when_full = []

  # A sink whose writes keep failing is retried with backoff for this long;
  # then its entries are dropped for it (counted) until a write succeeds
  # again. Default: "1m".
  retry_for = "1m"
}

# The local JSONL transcript store, laid out as Claude Code lays it out.
sink "jsonl" "local" {
  # The folder this store keeps its projects/ under, laid out as Claude
  # Code lays out its config folder. "" = Claude's config folder itself; an
  # archive names a folder of its own. Default: "".
  dir = ""

  # When to fsync: always (every write) | batch (at every flush, which acks wait for, and
  # once the intake pauses or at least every 10 drain intervals, 1s by default) | never.
  # Default: "batch".
  fsync = "batch"

  # How often queued entries are written out. "" = automatic: 100ms, or
  # 10ms when a cloud sink is configured. Default: "".
  drain_interval = ""

  # When one of a session's latest metadata lines (title, tag, last prompt,
  # ...) lies more than this many bytes before the end of its file, the
  # block is appended again, so readers of the 64 KiB tail still find it.
  # Default: 32768.
  reappend_bytes = 32768

  # How long to wait for another writer's lock on a session file. 0s: a
  # second writer of a session fails at once, naming the holder.
  # Default: "0s".
  lock_wait = "0s"

  # As a loader (resume { loaders = ["jsonl/local", ...] }): a transcript
  # larger than this is refused, so the summary loader serves it from its
  # last compaction. 0: no limit. Default: 0.
  load_max_bytes = 0

  # Seal this store at rest (an archive only: Claude Code's own folder, dir
  # = "", is never sealed). Each transcript becomes <name>.jsonl.sealed,
  # authenticated frames under one data key kept sealed with age in
  # <dir>/archive.key.age; file and folder names stay in the clear. Give
  # { identity = { file = PATH } } (and recipients = ["age1..."] to seal the
  # data key to more keys) or { passphrase = { env = NAME } }; keys by file,
  # env or command, never here. ls, show, info, fork, export and resume
  # read it with --from; other commands refuse it. Default: {} (plain).
  encryption = {}
}

# The archive scribe watch and scribe hook mirror into when pipeline.sinks
# is not configured (the built-in sinks, ["jsonl/local"], would write into
# the folder they follow): a folder of its own, laid out as Claude Code's,
# out of reach of Claude Code's cleanupPeriodDays sweep. ls, show, info,
# fork and export read it with --from jsonl/archive; resume asks it after
# the local store. Every option of sink "jsonl" "local" above applies.
sink "jsonl" "archive" {
  # A leading $XDG_DATA_HOME (also $XDG_CONFIG_HOME, $XDG_STATE_HOME,
  # $XDG_CACHE_HOME) is that variable, or its default (~/.local/share)
  # when it is unset. Default: "$XDG_DATA_HOME/scribe/archive".
  dir = "$XDG_DATA_HOME/scribe/archive"
}

# Resume tries its loaders in this order; the first that has the session
# serves it, and the result says why each earlier one missed.
resume {
  # Loader blocks, or sink blocks whose component is also a loader (jsonl,
  # memcache). Default: [] (none).
  loaders = ["jsonl/local", "jsonl/archive", "summary/default"]

  # An interrupted turn older than this is repaired but not continued.
  # 0s: no limit. Default: "6h".
  max_age = "6h"

  # The meta prompt appended after an interrupted turn.
  # Default: "Continue from where you left off.".
  continue_text = "Continue from where you left off."
}

# scribe watch and scribe hook: how they follow Claude Code's transcripts.
watch {
  # The longest transcript line mirrored, in bytes. A longer line is never
  # held in memory: it is counted, logged with its file and offset, and
  # passed over (the lines after it are mirrored). A line needs about its
  # own length in memory while it is read. Default: 268435456 (256 MiB).
  max_line_bytes = 268435456
}

# scribe usage: prices that replace the built-in table's (LiteLLM's and
# models.dev's, as ccusage 20.0.24 embeds them) for a model, named as the
# transcripts name it, in USD per million tokens, all four required. Every
# report and the statusline use them (a row's costUSD still wins), and the
# text reports say when one was applied. A file's usage block replaces this
# one whole. None by default.
usage {
  # price "claude-opus-4-5" {
  #   input       = 5
  #   output      = 25
  #   cache_write = 6.25
  #   cache_read  = 0.5
  # }
}

# The loader of last resort: the conversation from the last compaction
# summary on, marked partial. It has no options.
loader "summary" "default" {}

# Recent sessions in memory: a sink the pipeline fills and a loader resume
# asks first. Worth it in a long-lived host (add "memcache/recent" to
# pipeline.sinks and first to resume.loaders); a one-shot command starts
# with it empty.
sink "memcache" "recent" {
  # Raw bytes kept for all sessions; least recently used sessions go first.
  # Default: 67108864 (64 MiB).
  max_bytes = 67108864
}

# Mirrors every entry to a scribe server (or Claude Code's session ingress)
# as one PUT per entry with Last-Uuid. Add "ingress/team" to pipeline.sinks
# to turn it on; the local store then drains every 10 ms.
sink "ingress" "team" {
  base_url        = "http://127.0.0.1:8787" # required
  token           = ""                      # the bearer token, or
  token_file      = ""                      # a file holding it (read again after a 401); one of the two
  timeout         = "30s"                   # per request
  max_attempts    = 10                      # a round of retries; then retried every backoff_max
  backoff_min     = "500ms"
  backoff_max     = "8s"
  queue_size      = 1000                    # entries in memory before spilling to disk
  queue_bytes     = 16777216
  spool_dir       = ""                      # "" = <config dir>/scribe/spool/ingress/team
  spool_max_bytes = 1073741824              # past it new entries are dropped, counted and logged
  flush_wait      = "5s"                    # Flush waits this long for the server, then spools
  # Encrypts what the spool writes (age; a wrong key fails Start): {
  # recipients = ["age1..."], identity = { file = PATH } } or { passphrase =
  # { env = NAME } }; keys by file, env or command. Default: {} (plaintext).
  spool_encryption = {}
}

# The same mirror as batched v2 events (POST .../events every 10 ms).
sink "events" "team" {
  base_url          = "http://127.0.0.1:8787" # required
  token             = ""
  token_file        = ""
  timeout           = "30s"
  max_attempts      = 10
  backoff_min       = "500ms"
  backoff_max       = "8s"
  queue_size        = 1000
  queue_bytes       = 16777216
  spool_dir         = ""
  spool_max_bytes   = 1073741824
  flush_wait        = "5s"
  spool_encryption  = {}
  flush_interval    = "10ms"
  max_batch         = 500
  max_request_bytes = 4194304
}

# Serves resume from a scribe server's History API, leaving out the internal
# rows Claude Code's hydration drops. List "cloud/team" in resume.loaders after
# "jsonl/local"; push and pull can use it too (--to, --from).
loader "cloud" "team" {
  base_url   = "http://127.0.0.1:8787" # required
  token      = ""                      # the bearer token, or
  token_file = ""                      # a file holding it (read at each load); one of the two
  timeout    = "30s"                   # per request
}

# Sessions in a PostgreSQL table shared with the Agent SDK's reference
# PostgreSQL SessionStore adapter (its layout plus scribe's raw and uuid
# columns, added on start to a table the adapter made). A sink, a loader and
# a listing: add "postgres/team" to pipeline.sinks, to resume.loaders, or
# use it with --from / --to (ls, show, resume, fork, copy).
sink "postgres" "team" {
  url       = "postgres://scribe@127.0.0.1:5432/scribe?sslmode=disable" # required; a password belongs in PGPASSFILE, not here
  table     = "claude_session_entries" # optionally schema.name
  max_conns = 4                        # connections in the pool
}

# Sessions in an S3 bucket (AWS, or any S3-compatible server with endpoint)
# in the key layout of the SDK's reference S3 adapter:
# {prefix}{projectKey}/{sessionId}/part-{epochMs13}-{rand6}.jsonl, subagents
# under subagents/agent-<id>/. A sink, a loader and a listing, like postgres.
# Credentials: credentials_file (with profile), else AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY, else the default AWS chain; a secret_access_key
# written here is a configuration error.
sink "s3" "archive" {
  bucket           = "scribe-sessions" # required
  endpoint         = ""                # "" = AWS; e.g. "http://127.0.0.1:7070"
  region           = "us-east-1"
  prefix           = ""                # put before every key, e.g. "claude/"
  path_style       = false             # bucket in the path (most S3-compatible servers)
  credentials_file = ""                # a shared credentials file (ini)
  profile          = "default"         # its section
  part_bytes       = 1048576           # a transcript's buffer is stored as a part at this size,
  part_interval    = "1s"              # at least this often, and on every flush
}

# A third-party sink run as a separate process (hashicorp/go-plugin over
# gRPC). List "plugin/audit" in pipeline.sinks to use it. The same keys
# configure loader "plugin" and guard "plugin" blocks.
sink "plugin" "audit" {
  command       = "/usr/local/lib/scribe/webhook-sink" # the plugin binary
  args          = []
  sha256        = "0000000000000000000000000000000000000000000000000000000000000000" # sha256sum of the binary: checked before it runs
  env_allow     = []      # variables passed on, besides PATH, HOME and TMPDIR
  start_timeout = "10s"
  call_timeout  = "30s"
  config        = {}      # handed to the plugin as JSON
  reattach      = ""      # debugging: attach to a plugin started by hand
  queue_size    = 4096    # entries waiting for the plugin (spilling to disk)
  spool_encryption = {}   # seal the spool with age: { passphrase = { file = "..." } } or recipients + identity
}

# Refuses entries when environment variables say persistence is off.
guard "env" "default" {
  # Each rule refuses when `var` is set (and, with `equals`, has that value),
  # unless the variable named by `unless` is set. Default: these two rules.
  rules = [
    { var = "NODE_ENV", equals = "test", unless = "TEST_ENABLE_SESSION_PERSISTENCE" },
    { var = "CLAUDE_CODE_SKIP_PROMPT_HISTORY" },
  ]
}

# Refuses entries when the host's command line carries a flag that disables
# session persistence.
guard "flag" "default" {
  # Flags that turn persistence off. Default: ["--no-session-persistence"].
  flags = ["--no-session-persistence"]
}

# Refuses everything when cleanup_period_days is 0. It has no options.
guard "config" "default" {}

# Drops entries by type or system subtype before any sink sees them
# (counted by type). List "filter/noise" in pipeline.processors to use it.
processor "filter" "noise" {
  # Entry types dropped; user and assistant rows cannot be. Default: [].
  drop_types = ["progress"]
  # System entry subtypes dropped. Default: [].
  drop_subtypes = []
}

# One sink behind a processor of its own: the team mirror redacted while
# the local copy stays as Claude Code wrote it. List "redacted/team" in
# pipeline.sinks (and not the inner sink itself) to use it.
sink "redacted" "team" {
  # The processor block applied to this sink only. Required.
  processor = "redact/default"
  # The sink block that gets the processed entries. Required.
  sink = "events/team"
}

# Replaces secrets (cloud keys, tokens, private keys, database passwords,
# .env values, Authorization headers) in every JSON string an entry carries
# by [REDACTED:rule-id:ab12cd34] before any sink sees them; the suffix is a
# keyed hash, the same for the same secret. List "redact/default" in
# pipeline.processors to use it; `scribe scan` and `scribe redact` use this
# block for sessions already on disk.
processor "redact" "default" {
  # scribe's own rule set (see README, "Secrets"). Default: true.
  builtin_rules = true
  # Built-in rule ids left out. Default: [].
  disable_rules = []
  # Your own rules, after the built-in ones: objects with id, regex,
  # keywords (the rule runs only on strings holding one), and optionally
  # secret_group, entropy, need_digit, allow, span, generic. Default: [].
  rules = []
  # Least entropy (bits per byte) of any secret; 0 keeps each rule's own.
  # Default: 0.
  entropy = 0
  # Regexes of values that are never secrets. Default: [].
  allow_patterns = []
  # Regexes of session cwds (and, for scan/redact, transcript paths) left
  # alone. Default: [].
  allow_paths = []
  # The marker's HMAC key: { file = PATH }, { env = NAME } or
  # { command = [...] }, never the key itself. Default: {} (a random key
  # kept 0600 in <config dir>/scribe/redact.key).
  key = {}
  # Encrypts the originals `scribe redact` keeps in the trash (age):
  # { recipients = ["age1..."], identity = { file = PATH } } or
  # { passphrase = { env = NAME } }. Default: {} (kept unencrypted, 0600).
  trash = {}
}

# `scribe serve`: the cloud side (v1 session ingress, v2 events, the History
# API) on NATS JetStream. Only `scribe serve` reads this block; its flags
# (--listen, --data-dir, --nats-url, --nats-creds, --replicas, --sync) beat it.
server {
  # HTTP address to listen on, host:port. Default: "127.0.0.1:8787".
  listen = "127.0.0.1:8787"

  # Folder of the embedded JetStream store, used when nats_url is empty.
  # "" = <user config dir>/scribe/serve (~/.config/scribe/serve on Linux).
  # Default: "".
  data_dir = ""

  # NATS server or cluster to use instead, such as
  # "nats://10.0.0.1:4222,nats://10.0.0.2:4222"; then any number of
  # `scribe serve` processes can share it. "" runs an embedded nats-server
  # with JetStream in data_dir, reachable only from inside the process.
  # Default: "".
  nats_url = ""

  # NATS credentials file (JWT and nkey) for nats_url. Default: "".
  nats_creds = ""

  # Replicas of the stream and of the KV buckets: 1, or up to the size of
  # the JetStream cluster (3 is usual). Default: 1.
  replicas = 1

  # Largest request body accepted, in bytes; a larger one gets 413.
  # Default: 8388608 (8 MiB).
  max_body_bytes = 8388608

  # Duplicate window of the stream's message ids. Retries are idempotent
  # beyond it too; it only makes quick retries cheaper. Default: "2m".
  duplicate_window = "2m"

  # When the embedded JetStream fsyncs: "always" fsyncs every write before
  # it is acknowledged, so an acknowledged entry survives a power loss; a
  # duration such as "2m" (nats-server's own default) fsyncs in the
  # background that often, faster but an acknowledged entry may be lost
  # with the machine. With nats_url the NATS server's own jetstream
  # { sync_interval } applies. Default: "always".
  sync = "always"

  # Accepted bearer tokens, kept as their SHA-256 in hex (`scribe token new`
  # makes a token and its line; `scribe token hash` hashes one read from
  # stdin). Each maps to a tenant (a-z, 0-9, '_', '-') that owns the
  # sessions written with it, and to scopes: "read", "write". More tokens
  # can come from `scribe serve --token-file`. Default: [] (every request
  # gets 401). For example:
  #   tokens = [
  #     { sha256 = "<64 hex digits>", tenant = "acme", scopes = ["read", "write"] },
  #   ]
  tokens = []

  # The processor "redact" block (its name) that redacts every entry
  # before it is stored, whoever sent it. Default: "" (stored as sent).
  redact = ""

  # The web viewer under /ui/ (sign in with a token; share links) answers
  # only to these Host headers, as a browser sends them: the name people
  # type, such as "scribe.example.com", or "host:port" when the port is
  # not the scheme's own. A request with another Host is refused (DNS
  # rebinding). Default: [] (the listen address and localhost:<port>).
  ui_hosts = []

  # How long a session moved to the server's trash (scribe rm --from
  # <server>, the viewer's Move to trash) is kept before the server empties
  # it for good, checked every hour: a duration such as "720h", or "30d";
  # "0" keeps it until `scribe trash empty --from <server>`. Default: "720h".
  trash_retention = "720h"
}
