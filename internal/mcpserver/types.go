package mcpserver

// Tool arguments and results. Their JSON is the wire format of the tools
// (see doc.go). The input schemas given to clients are derived from the In
// types, so a field's `jsonschema` tag is what a model reads about it: keep
// it short, since every tag is in every conversation's tools/list. Fields
// without omitempty are required. Output schemas are declared only for the
// tools whose results programs read (tools.go, toolTable).
//
// One name per concept across every tool: session (one session: the
// current one, or the one to read or forget), sessions (a filter), kinds
// (a filter), since/until (content time, until exclusive), k (hits),
// budget (tokens), offset/limit (paging: items of a list, or bytes of one
// item's content in uc_get and uc_get_document).

// Item is one stored item (a chunk). Content may be a window of the whole
// (offset/limit, or cut to bound the result): then Size is the whole
// content's length in bytes and NextOffset where the rest starts.
type Item struct {
	ID          string            `json:"id"`
	Session     string            `json:"session,omitempty"`
	Role        string            `json:"role,omitempty"`
	Kind        string            `json:"kind"`
	Time        string            `json:"time"`
	Seq         uint64            `json:"seq"`
	Content     string            `json:"content"`
	Meta        map[string]string `json:"meta,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	ChunkParent string            `json:"chunk_parent,omitempty"`
	ChunkIndex  int               `json:"chunk_index,omitempty"`
	Tool        *ToolOut          `json:"tool,omitempty"`
	Supersedes  []string          `json:"supersedes,omitempty"`
	Edited      bool              `json:"edited,omitempty"`
	EditedBy    string            `json:"edited_by,omitempty"`
	// Offset is where Content starts in the whole content (bytes).
	Offset int `json:"offset,omitempty"`
	// Size is the whole content's length in bytes, set when Content is
	// not all of it.
	Size int `json:"size,omitempty"`
	// NextOffset is where the rest starts when Content was cut (0: not cut).
	NextOffset int `json:"next_offset,omitempty"`
}

// StoreIn are the arguments of uc_store.
type StoreIn struct {
	Content    string            `json:"content" jsonschema:"the text; a tool call's result (may be empty then)"`
	Session    string            `json:"session,omitempty" jsonschema:"the conversation's id"`
	Role       string            `json:"role,omitempty" jsonschema:"user (default), assistant, system, developer or tool"`
	Kind       string            `json:"kind,omitempty" jsonschema:"conversation (default), document, knowledge or tool_call"`
	Meta       map[string]string `json:"meta,omitempty" jsonschema:"string pairs; name is how uc_get_document finds it"`
	Parent     string            `json:"parent,omitempty" jsonschema:"id this replies to"`
	Time       string            `json:"time,omitempty" jsonschema:"when it happened (default now)"`
	Tool       *ToolIn           `json:"tool,omitempty" jsonschema:"makes it a tool call"`
	Supersedes []string          `json:"supersedes,omitempty" jsonschema:"ids this makes outdated"`
	ID         string            `json:"id,omitempty" jsonschema:"idempotency key (a retry writes nothing)"`
	// AllowDuplicate turns near-duplicate detection off for this call.
	AllowDuplicate bool `json:"allow_duplicate,omitempty" jsonschema:"store even if already stored"`
}

// StoreOut is the result of uc_store.
type StoreOut struct {
	IDs         []string `json:"ids" jsonschema:"chunk ids written, in order"`
	Seqs        []uint64 `json:"seqs"`
	Chunked     bool     `json:"chunked"`
	Parent      string   `json:"chunk_parent,omitempty" jsonschema:"the whole's id when chunked"`
	Existed     bool     `json:"existed" jsonschema:"nothing written: same id and content already stored"`
	DuplicateOf string   `json:"duplicate_of,omitempty" jsonschema:"nothing written: this item has the same text"`
}

// QueryIn are the arguments of uc_query.
type QueryIn struct {
	Query             string   `json:"query"`
	K                 int      `json:"k,omitempty" jsonschema:"hits, 1 to 200 (default 10)"`
	Session           string   `json:"session,omitempty" jsonschema:"the current session (ranks higher)"`
	Sessions          []string `json:"sessions,omitempty"`
	Kinds             []string `json:"kinds,omitempty"`
	Roles             []string `json:"roles,omitempty"`
	Since             string   `json:"since,omitempty" jsonschema:"content time from (RFC 3339 or date)"`
	Until             string   `json:"until,omitempty" jsonschema:"content time before"`
	Mode              string   `json:"mode,omitempty" jsonschema:"hybrid (default), bm25 or vector"`
	IncludeSuperseded bool     `json:"include_superseded,omitempty" jsonschema:"outdated items too"`
	Now               string   `json:"now,omitempty"`
	Recall
}

// Recall are the arguments uc_query and uc_context share beyond the
// query: memory as of a moment, a metadata filter, diversity, and the
// time zone of time phrases.
type Recall struct {
	AsOf    string            `json:"as_of,omitempty" jsonschema:"seq or time: memory then"`
	Meta    map[string]string `json:"meta,omitempty" jsonschema:"meta pairs to match"`
	Diverse bool              `json:"diverse,omitempty" jsonschema:"vary hits (MMR)"`
	TZ      string            `json:"tz,omitempty" jsonschema:"IANA time zone"`
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
	Snippet      string   `json:"snippet"`
	IsChunk      bool     `json:"is_chunk"`
	ChunkParent  string   `json:"chunk_parent,omitempty"`
	Tool         *ToolOut `json:"tool,omitempty"`
	SupersededBy []string `json:"superseded_by,omitempty"`
}

// QueryOut is the result of uc_query. Query is the question as the engine
// read it, cut to maxEcho runes: a long question is not sent back whole.
type QueryOut struct {
	Query string `json:"query"`
	Mode  string `json:"mode"`
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	Hits  []Hit  `json:"hits"`
}

// ContextIn are the arguments of uc_context.
type ContextIn struct {
	Query   string `json:"query,omitempty" jsonschema:"the user's message (may be empty with session)"`
	Session string `json:"session,omitempty" jsonschema:"the current session"`
	Budget  *int   `json:"budget,omitempty" jsonschema:"tokens, 1 to 100000 (default 4000)"`
	Recent  *int   `json:"recent,omitempty" jsonschema:"recent turns of session (default 6)"`
	Format  string `json:"format,omitempty" jsonschema:"xml (default), json or text"`
	Recall
}

// ContextOut is the structured result of uc_context; the block itself is
// the text content (not repeated here).
type ContextOut struct {
	Format   string   `json:"format"`
	Tokens   int      `json:"tokens"`
	Budget   int      `json:"budget"`
	Included []string `json:"included"`
	Recent   []string `json:"recent"`
}

// GetIn are the arguments of uc_get.
type GetIn struct {
	IDs        []string `json:"ids"`
	WithChunks bool     `json:"with_chunks,omitempty" jsonschema:"a chunk's id gives its whole"`
	History    bool     `json:"history,omitempty" jsonschema:"also every version of an edited item"`
	Offset     int      `json:"offset,omitempty" jsonschema:"first byte of each content"`
	Limit      int      `json:"limit,omitempty" jsonschema:"most bytes (default and most 32768)"`
	AsOf       string   `json:"as_of,omitempty" jsonschema:"log seq or time"`
}

// GetOut is the result of uc_get.
type GetOut struct {
	Items   []Item        `json:"items"`
	History []ItemHistory `json:"history,omitempty"`
}

// ThreadIn are the arguments of uc_get_thread.
type ThreadIn struct {
	ID    string `json:"id"`
	Depth int    `json:"depth,omitempty" jsonschema:"steps each way, 1 to 100 (default 10)"`
}

// ThreadOut is the result of uc_get_thread.
type ThreadOut struct {
	Items  []Item `json:"items"`
	Anchor string `json:"anchor"`
	// More is set when the result bound left out items of the chain.
	More int `json:"more,omitempty"`
}

// SessionIn are the arguments of uc_get_session.
type SessionIn struct {
	Session string `json:"session"`
	Offset  int    `json:"offset,omitempty" jsonschema:"first item (paging)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"most items, 1 to 500 (default 50)"`
	Last    int    `json:"last,omitempty" jsonschema:"instead: the last N items"`
	AsOf    string `json:"as_of,omitempty" jsonschema:"log seq or time"`
}

// SessionOut is the result of uc_get_session.
type SessionOut struct {
	Session    SessionInfo `json:"session"`
	Items      []Item      `json:"items"`
	NextOffset int         `json:"next_offset,omitempty"`
}

// SessionInfo summarises a session.
type SessionInfo struct {
	ID      string         `json:"id"`
	First   string         `json:"first"`
	Last    string         `json:"last"`
	Items   int            `json:"items"`
	Kinds   map[string]int `json:"kinds,omitempty"`
	Title   string         `json:"title,omitempty"`
	Summary string         `json:"summary,omitempty"`
}

// ListSessionsIn are the arguments of uc_list_sessions.
type ListSessionsIn struct {
	Since string `json:"since,omitempty" jsonschema:"only sessions active since"`
	Limit int    `json:"limit,omitempty" jsonschema:"most sessions, 1 to 500 (default 50)"`
}

// ListSessionsOut is the result of uc_list_sessions.
type ListSessionsOut struct {
	Sessions []SessionInfo `json:"sessions"`
	More     bool          `json:"more"`
}

// DocumentIn are the arguments of uc_get_document.
type DocumentIn struct {
	ID     string `json:"id,omitempty" jsonschema:"the document's id, or any chunk's"`
	Name   string `json:"name,omitempty" jsonschema:"or its name (meta name)"`
	Offset int    `json:"offset,omitempty" jsonschema:"first byte to return"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most bytes (default and most 32768)"`
}

// DocumentOut is the result of uc_get_document. Content is the whole
// document, or the window Offset..NextOffset of its Size bytes.
type DocumentOut struct {
	ID         string   `json:"id"`
	Name       string   `json:"name,omitempty"`
	Session    string   `json:"session,omitempty"`
	Time       string   `json:"time"`
	Chunks     []string `json:"chunks"`
	Content    string   `json:"content"`
	Offset     int      `json:"offset,omitempty"`
	Size       int      `json:"size"`
	NextOffset int      `json:"next_offset,omitempty"`
}

// PeriodIn are the arguments of uc_period.
type PeriodIn struct {
	Period   string            `json:"period" jsonschema:"today, last month, May 2023, 3 days ago, 2023-05-01..2023-05-31"`
	Sessions []string          `json:"sessions,omitempty"`
	Kinds    []string          `json:"kinds,omitempty"`
	Meta     map[string]string `json:"meta,omitempty"`
	Offset   int               `json:"offset,omitempty" jsonschema:"first item (paging)"`
	Limit    int               `json:"limit,omitempty" jsonschema:"most items, 1 to 500 (default 50)"`
}

// PeriodOut is the result of uc_period.
type PeriodOut struct {
	Since      string `json:"since,omitempty"`
	Until      string `json:"until,omitempty"`
	Items      []Item `json:"items"`
	Total      int    `json:"total"`
	NextOffset int    `json:"next_offset,omitempty"`
	// Unlisted counts items without a session in the period beyond the
	// most the engine's index lists (index.Snippets): they are in
	// Total but no page shows them; a shorter period does.
	Unlisted int `json:"unlisted,omitempty"`
}

// ForgetIn are the arguments of uc_forget.
type ForgetIn struct {
	IDs     []string `json:"ids,omitempty" jsonschema:"items (a document's id: all its chunks)"`
	Session string   `json:"session,omitempty" jsonschema:"a whole session (with since/until: that span)"`
	Since   string   `json:"since,omitempty" jsonschema:"content time from (needs until)"`
	Until   string   `json:"until,omitempty" jsonschema:"content time before"`
	Reason  string   `json:"reason,omitempty" jsonschema:"kept in the audit trail"`
}

// ForgetOut is the result of uc_forget.
type ForgetOut struct {
	Seq     uint64   `json:"seq" jsonschema:"the tombstone's seq"`
	Removed []string `json:"removed" jsonschema:"ids hidden"`
	Erasure bool     `json:"erasure" jsonschema:"always false: hidden, not erased"`
	Note    string   `json:"note"`
}

// StatusIn takes no arguments.
type StatusIn struct{}

// StatusOut is the result of uc_status.
type StatusOut struct {
	Events      uint64             `json:"events"`
	Head        uint64             `json:"head"`
	HeadHash    string             `json:"head_hash,omitempty"`
	CaughtUp    bool               `json:"caught_up"`
	Projections []ProjectionStatus `json:"projections"`
	Mirror      *MirrorStatus      `json:"mirror,omitempty"`
}

// ProjectionStatus is one projection's position.
type ProjectionStatus struct {
	Name     string `json:"name"`
	Seq      uint64 `json:"seq"`
	CaughtUp bool   `json:"caught_up"`
}

// MirrorStatus is the Arweave mirror's state.
type MirrorStatus struct {
	Pending    int    `json:"pending" jsonschema:"segments not yet confirmed"`
	Confirmed  int    `json:"confirmed"`
	SafeUpTo   uint64 `json:"safe_up_to" jsonschema:"every event up to this seq is confirmed"`
	Unuploaded uint64 `json:"unuploaded"`
}

// ProfileIn are the arguments of uc_profile.
type ProfileIn struct {
	Subject string `json:"subject,omitempty" jsonschema:"one subject (default all)"`
}

// Fact is one derived fact (kind knowledge) with the ids of the items it
// comes from. In uc_consolidate's report, Reason says why one was refused
// and DuplicateOf names the stored fact a duplicate repeats.
type Fact struct {
	ID          string   `json:"id,omitempty"`
	Subject     string   `json:"subject,omitempty"`
	Text        string   `json:"text"`
	Sources     []string `json:"derived_from"`
	Supersedes  []string `json:"supersedes,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	DuplicateOf string   `json:"duplicate_of,omitempty"`
}

// SubjectProfile is the current profile of one subject: its facts.
type SubjectProfile struct {
	ID      string `json:"id"`
	Subject string `json:"subject"`
	Facts   []Fact `json:"facts"`
	// MoreFacts counts the facts left out to bound the result (uc_get of
	// the profile's id reads it whole).
	MoreFacts int `json:"more_facts,omitempty"`
}

// ProfileOut is the result of uc_profile.
type ProfileOut struct {
	Profiles []SubjectProfile `json:"profiles"`
	// MoreCount counts the subjects left out to bound the result;
	// MoreSubjects names the first 50 of them (each is read with
	// uc_profile and that subject).
	MoreCount    int      `json:"more_subjects_count,omitempty"`
	MoreSubjects []string `json:"more_subjects,omitempty"`
}

// ConsolidateIn are the arguments of uc_consolidate. The model and its
// endpoint are the store owner's settings: a client cannot send turns
// elsewhere.
type ConsolidateIn struct {
	Session string `json:"session,omitempty" jsonschema:"only this session's turns"`
	Since   string `json:"since,omitempty" jsonschema:"only turns from this content time"`
}

// ConsolidateOut is the result of uc_consolidate. The counts are whole;
// the lists are cut to bound the result (Omitted counts what they leave
// out).
type ConsolidateOut struct {
	Model          string `json:"model"`
	Requests       int    `json:"requests"`
	Turns          int    `json:"turns"`
	StoredCount    int    `json:"stored_count"`
	RefusedCount   int    `json:"refused_count"`
	DuplicateCount int    `json:"duplicate_count"`
	Stored         []Fact `json:"stored"`
	Refused        []Fact `json:"refused"`
	Duplicates     []Fact `json:"duplicates"`
	// Profiles are the subjects whose profile this run rewrote.
	Profiles []string `json:"profiles"`
	Omitted  int      `json:"omitted,omitempty"`
	// Pending is true when turns were left for another run.
	Pending bool `json:"pending,omitempty"`
}
