package mcpserver

// Tool arguments and results. Their JSON is the wire format of the tools
// (see doc.go); the input schemas given to clients are derived from these
// structs, so a field's `jsonschema` tag is what a model reads about it.
// Fields without omitempty are required.

// Item is one stored item (a chunk) in full.
type Item struct {
	ID          string            `json:"id" jsonschema:"chunk id"`
	Session     string            `json:"session,omitempty" jsonschema:"session id"`
	Role        string            `json:"role,omitempty" jsonschema:"role of a conversation turn (user, assistant, ...)"`
	Kind        string            `json:"kind" jsonschema:"conversation, document, knowledge or tool_call"`
	Time        string            `json:"time" jsonschema:"content time, RFC 3339 UTC"`
	Seq         uint64            `json:"seq" jsonschema:"log sequence number of the event that stored it"`
	Content     string            `json:"content"`
	Meta        map[string]string `json:"meta,omitempty"`
	Parent      string            `json:"parent,omitempty" jsonschema:"id of the item this replies to"`
	ChunkParent string            `json:"chunk_parent,omitempty" jsonschema:"set when this is one chunk of a larger item: the id of the whole (uc_get_document)"`
	ChunkIndex  int               `json:"chunk_index,omitempty" jsonschema:"position of this chunk in the whole"`
	Tool        *ToolOut          `json:"tool,omitempty" jsonschema:"set on a tool call: its name, arguments and status (content is its result)"`
	Supersedes  []string          `json:"supersedes,omitempty" jsonschema:"ids of the items this one replaced as outdated"`
	Edited      bool              `json:"edited,omitempty" jsonschema:"true when this is an edited version (uc_get with history lists the earlier ones)"`
	EditedBy    string            `json:"edited_by,omitempty"`
}

// StoreIn are the arguments of uc_store.
type StoreIn struct {
	Content    string            `json:"content" jsonschema:"the text to remember (a turn, a fact, a whole document or tool result: long ones are chunked)"`
	Session    string            `json:"session,omitempty" jsonschema:"session (conversation) id it belongs to"`
	Role       string            `json:"role,omitempty" jsonschema:"for conversation turns: user, assistant, system or tool"`
	Kind       string            `json:"kind,omitempty" jsonschema:"conversation (default), document, knowledge or tool_call"`
	Meta       map[string]string `json:"meta,omitempty" jsonschema:"string key/values kept with it; a document's meta name is how uc_get_document finds it by name"`
	Parent     string            `json:"parent,omitempty" jsonschema:"id of the item this replies to (builds the thread of uc_get_thread)"`
	Time       string            `json:"time,omitempty" jsonschema:"when it happened: RFC 3339, a date 2006-01-02 or unix ms (default now)"`
	Tool       *ToolIn           `json:"tool,omitempty" jsonschema:"makes this a tool call (kind tool_call): content is its result, parent the message that triggered it"`
	Supersedes []string          `json:"supersedes,omitempty" jsonschema:"ids of live items this one replaces as outdated (a fact that changed)"`
	ID         string            `json:"id,omitempty" jsonschema:"idempotency key: storing again with the same id and content returns the first result and writes nothing"`
	// AllowDuplicate turns near-duplicate detection off for this call.
	AllowDuplicate bool `json:"allow_duplicate,omitempty" jsonschema:"store it even when a live item of the same session, role and kind already has this text (ignoring case and spacing); by default that item is returned as duplicate_of and nothing is written"`
}

// StoreOut is the result of uc_store.
type StoreOut struct {
	IDs     []string `json:"ids" jsonschema:"chunk ids written, in order (one unless the content was chunked)"`
	Seqs    []uint64 `json:"seqs" jsonschema:"log sequence numbers, one per chunk"`
	Chunked bool     `json:"chunked" jsonschema:"whether the content was split into several chunks"`
	Parent  string   `json:"chunk_parent,omitempty" jsonschema:"id of the whole when chunked"`
	Existed bool     `json:"existed" jsonschema:"true when the id was already stored with this content (nothing new written)"`
	// DuplicateOf is set when nothing was written because the same text
	// is already stored.
	DuplicateOf string `json:"duplicate_of,omitempty" jsonschema:"set when nothing was written because a live item of the same session, role and kind has the same text (ignoring case and spacing): its id (the whole's id when chunked); ids are then that item's"`
}

// QueryIn are the arguments of uc_query.
type QueryIn struct {
	Query             string   `json:"query" jsonschema:"what to look for; time phrases like yesterday, last week or in May 2023 rank items from that time first (since/until filter)"`
	K                 int      `json:"k,omitempty" jsonschema:"number of hits, 1 to 200 (default 10)"`
	Sessions          []string `json:"sessions,omitempty" jsonschema:"only these sessions"`
	Active            string   `json:"active_session,omitempty" jsonschema:"the current session: its items rank a little higher (no filter)"`
	Kinds             []string `json:"kinds,omitempty" jsonschema:"only these kinds: conversation, document, knowledge, tool_call"`
	Roles             []string `json:"roles,omitempty" jsonschema:"only these roles"`
	Since             string   `json:"since,omitempty" jsonschema:"only content from this time on (RFC 3339, date or unix ms)"`
	Until             string   `json:"until,omitempty" jsonschema:"only content before this time"`
	Mode              string   `json:"mode,omitempty" jsonschema:"hybrid (default), bm25 or vector"`
	IncludeSuperseded bool     `json:"include_superseded,omitempty" jsonschema:"rank items that a newer item supersedes like any other (default: below the current ones)"`
}

// Hit is one ranked result of uc_query.
type Hit struct {
	ID           string   `json:"id"`
	Session      string   `json:"session,omitempty"`
	Role         string   `json:"role,omitempty"`
	Kind         string   `json:"kind"`
	Time         string   `json:"time"`
	Seq          uint64   `json:"seq"`
	Score        float64  `json:"score"`
	Snippet      string   `json:"snippet" jsonschema:"the start of the content; uc_get returns it whole"`
	IsChunk      bool     `json:"is_chunk" jsonschema:"true when the hit is one chunk of a larger item (uc_get with with_chunks, or uc_get_document)"`
	ChunkParent  string   `json:"chunk_parent,omitempty"`
	Tool         *ToolOut `json:"tool,omitempty" jsonschema:"set on a tool call"`
	SupersededBy []string `json:"superseded_by,omitempty" jsonschema:"ids of newer items that replace this one as outdated"`
}

// QueryOut is the result of uc_query.
type QueryOut struct {
	Query string `json:"query"`
	Mode  string `json:"mode"`
	Since string `json:"since,omitempty" jsonschema:"effective time window start (filters and time phrases)"`
	Until string `json:"until,omitempty"`
	Hits  []Hit  `json:"hits"`
}

// ContextIn are the arguments of uc_context.
type ContextIn struct {
	Query   string `json:"query,omitempty" jsonschema:"what the context is for (usually the user's latest message); may be empty when session is given"`
	Budget  *int   `json:"budget,omitempty" jsonschema:"most tokens the whole block may take (default 4000)"`
	Session string `json:"session,omitempty" jsonschema:"the active session: its recent turns open the context"`
	Recent  *int   `json:"recent,omitempty" jsonschema:"recent turns of the active session to include (default 6)"`
	Format  string `json:"format,omitempty" jsonschema:"xml (default), json or text"`
}

// ContextOut is the result of uc_context.
type ContextOut struct {
	Context  string   `json:"context" jsonschema:"the packed block, ready to put in a prompt"`
	Format   string   `json:"format"`
	Tokens   int      `json:"tokens"`
	Budget   int      `json:"budget"`
	Included []string `json:"included" jsonschema:"ids of the ranked items included"`
	Recent   []string `json:"recent" jsonschema:"ids of the recent turns included"`
}

// GetIn are the arguments of uc_get.
type GetIn struct {
	IDs        []string `json:"ids" jsonschema:"item (chunk) ids, as returned by uc_query or uc_store"`
	WithChunks bool     `json:"with_chunks,omitempty" jsonschema:"for an id that is a chunk of a larger item, return every chunk of that item in order"`
	History    bool     `json:"history,omitempty" jsonschema:"also list every version of each item (edits), oldest first, with time and author"`
}

// GetOut is the result of uc_get.
type GetOut struct {
	Items   []Item        `json:"items"`
	History []ItemHistory `json:"history,omitempty" jsonschema:"with history: the versions of each id asked for"`
}

// ThreadIn are the arguments of uc_get_thread.
type ThreadIn struct {
	ID    string `json:"id" jsonschema:"an item id"`
	Depth int    `json:"depth,omitempty" jsonschema:"how many replies up and down to follow, 1 to 100 (default 10)"`
}

// ThreadOut is the result of uc_get_thread.
type ThreadOut struct {
	Items  []Item `json:"items" jsonschema:"the chain in content-time order: ancestors, the item, then replies"`
	Anchor string `json:"anchor" jsonschema:"the id asked for"`
}

// SessionIn are the arguments of uc_get_session.
type SessionIn struct {
	Session string `json:"session" jsonschema:"session id"`
	From    int    `json:"from,omitempty" jsonschema:"index of the first item to return (paging; 0 is the start)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"most items to return, 1 to 500 (default 50)"`
	Last    int    `json:"last,omitempty" jsonschema:"return the session's last N items (its most recent turns), 1 to 500; not with from or limit"`
}

// SessionOut is the result of uc_get_session.
type SessionOut struct {
	Session SessionInfo `json:"session"`
	Items   []Item      `json:"items"`
	Next    int         `json:"next,omitempty" jsonschema:"from value of the next page; absent on the last page"`
}

// SessionInfo summarises a session.
type SessionInfo struct {
	ID      string         `json:"id"`
	First   string         `json:"first" jsonschema:"earliest content time"`
	Last    string         `json:"last" jsonschema:"latest content time"`
	Items   int            `json:"items"`
	Kinds   map[string]int `json:"kinds,omitempty"`
	Title   string         `json:"title,omitempty"`
	Summary string         `json:"summary,omitempty" jsonschema:"the session's short summary (L0)"`
}

// ListSessionsIn are the arguments of uc_list_sessions.
type ListSessionsIn struct {
	Since string `json:"since,omitempty" jsonschema:"only sessions active at or after this time (RFC 3339, date or unix ms)"`
	Limit int    `json:"limit,omitempty" jsonschema:"most sessions, 1 to 500 (default 50)"`
}

// ListSessionsOut is the result of uc_list_sessions.
type ListSessionsOut struct {
	Sessions []SessionInfo `json:"sessions" jsonschema:"most recently active first"`
	More     bool          `json:"more" jsonschema:"true when more sessions match than were returned"`
}

// DocumentIn are the arguments of uc_get_document.
type DocumentIn struct {
	ID   string `json:"id,omitempty" jsonschema:"the document's id (chunk_parent of its chunks, or the id of any of its chunks)"`
	Name string `json:"name,omitempty" jsonschema:"or: the document's name (meta name given when it was stored)"`
}

// DocumentOut is the result of uc_get_document.
type DocumentOut struct {
	ID      string   `json:"id"`
	Name    string   `json:"name,omitempty"`
	Session string   `json:"session,omitempty"`
	Time    string   `json:"time"`
	Chunks  []string `json:"chunks" jsonschema:"chunk ids in order"`
	Content string   `json:"content" jsonschema:"the whole document, its chunks joined in order"`
}

// PeriodIn are the arguments of uc_period.
type PeriodIn struct {
	Period  string `json:"period" jsonschema:"today, yesterday, this week, last month, May 2023, in 2023, 3 days ago, or a range 2023-05-01..2023-05-31"`
	Session string `json:"session,omitempty" jsonschema:"only this session"`
	Kind    string `json:"kind,omitempty" jsonschema:"only this kind"`
	From    int    `json:"from,omitempty" jsonschema:"index of the first item (paging)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"most items, 1 to 500 (default 50)"`
}

// PeriodOut is the result of uc_period.
type PeriodOut struct {
	Since string `json:"since,omitempty" jsonschema:"start of the period (inclusive); absent when open"`
	Until string `json:"until,omitempty" jsonschema:"end of the period (exclusive); absent when open"`
	Items []Item `json:"items" jsonschema:"newest first"`
	Total int    `json:"total" jsonschema:"items in the period"`
	Next  int    `json:"next,omitempty" jsonschema:"from value of the next page; absent on the last page"`
}

// ForgetIn are the arguments of uc_forget.
type ForgetIn struct {
	IDs     []string `json:"ids,omitempty" jsonschema:"item ids to forget (a document's id forgets all its chunks)"`
	Session string   `json:"session,omitempty" jsonschema:"a session: everything in it (with from/to: only that span)"`
	From    string   `json:"from,omitempty" jsonschema:"content time range start, inclusive (needs to)"`
	To      string   `json:"to,omitempty" jsonschema:"content time range end, exclusive"`
	Reason  string   `json:"reason,omitempty" jsonschema:"why; kept in the audit trail"`
}

// ForgetOut is the result of uc_forget.
type ForgetOut struct {
	Seq     uint64   `json:"seq" jsonschema:"log sequence number of the tombstone"`
	Removed []string `json:"removed" jsonschema:"ids hidden by it"`
	Erasure bool     `json:"erasure" jsonschema:"always false: a tombstone hides, it does not erase"`
	Note    string   `json:"note"`
}

// StatusIn takes no arguments.
type StatusIn struct{}

// StatusOut is the result of uc_status.
type StatusOut struct {
	Events      uint64             `json:"events" jsonschema:"events in the log"`
	Head        uint64             `json:"head" jsonschema:"seq of the last event"`
	HeadHash    string             `json:"head_hash,omitempty"`
	CaughtUp    bool               `json:"caught_up" jsonschema:"every projection has applied the whole log"`
	Projections []ProjectionStatus `json:"projections"`
	Mirror      *MirrorStatus      `json:"mirror,omitempty" jsonschema:"Arweave mirror; absent when the store has none"`
}

// ProjectionStatus is one projection's position.
type ProjectionStatus struct {
	Name     string `json:"name"`
	Seq      uint64 `json:"seq"`
	CaughtUp bool   `json:"caught_up"`
}

// MirrorStatus is the Arweave mirror's state.
type MirrorStatus struct {
	Pending    int    `json:"pending" jsonschema:"segments uploaded and not yet confirmed"`
	Confirmed  int    `json:"confirmed"`
	SafeUpTo   uint64 `json:"safe_up_to" jsonschema:"every event up to this seq is confirmed on Arweave"`
	Unuploaded uint64 `json:"unuploaded" jsonschema:"events not yet uploaded"`
}
