//! Versioned schema migrations, applied on connect under an advisory lock so several
//! servers starting at once apply each migration exactly once.

use crate::error::{Error, Result};
use deadpool_postgres::Object;

/// The advisory lock key migrations and the embedder setup hold ("metarag" in ASCII).
pub(crate) const LOCK: i64 = 0x006d_6574_6172_6167;

/// The start of a statement over the postings of the chunks selected by `$cond` (SQL
/// after `WHERE true`): `u` holds (chunk id, document id, lexeme, `tf` in the text, `ttf`
/// in the title) from each chunk's generated `tsvector`, whose positions carry weight `A`
/// in the title and `B` in the text; `l` each chunk's text and title lengths in lexemes. Shared by the
/// migration that fills the table and by every write, so both count alike.
macro_rules! postings_of {
    ($cond:literal) => {
        concat!(
            "WITH u AS (
                 SELECT c.id, c.doc_id, e.lexeme,
                        cardinality(e.weights) - cardinality(array_positions(e.weights, 'A')) AS tf,
                        cardinality(array_positions(e.weights, 'A')) AS ttf
                 FROM chunks c, unnest(c.tsv) AS e(lexeme, positions, weights)
                 WHERE true ",
            $cond,
            "
             ),
             l AS (
                 SELECT id, doc_id, sum(tf)::int AS dl, sum(ttf)::int AS tdl
                 FROM u GROUP BY id, doc_id
             )
             "
        )
    };
}
pub(crate) use postings_of;

/// Migrations in order; version `i + 1` is `MIGRATIONS[i]`. Never edit a released one:
/// append a new one.
pub const MIGRATIONS: &[&str] = &[
    // 1: documents, chunks with their vectors and full-text vectors.
    r#"
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE metarag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        source TEXT NOT NULL,
        format TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        date BIGINT,
        ingested_at BIGINT NOT NULL,
        chunk_count INTEGER NOT NULL,
        text TEXT,
        metadata JSONB NOT NULL DEFAULT '{}'
    );
    CREATE INDEX documents_date ON documents (date);
    CREATE TABLE chunks (
        id BIGSERIAL PRIMARY KEY,
        doc_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        section JSONB NOT NULL,
        page_from INTEGER,
        page_to INTEGER,
        byte_start BIGINT NOT NULL,
        byte_end BIGINT NOT NULL,
        token_count INTEGER NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding vector NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', title), 'A') ||
            setweight(to_tsvector('english', text), 'B')
        ) STORED,
        UNIQUE (doc_id, ordinal)
    );
    CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
    CREATE INDEX chunks_doc ON chunks (doc_id);
    "#,
    // 2: what several servers on one database share beside the documents: the run log
    // (every answered question with its trace) and the API keys (hashes only). The trace
    // is TEXT, not JSONB: JSONB refuses the `\u0000` escape a hostile document's text can
    // put into a trace, and the run log must never lose a run to that.
    r#"
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        created_ms BIGINT NOT NULL,
        surface TEXT NOT NULL,
        question TEXT NOT NULL,
        strategy TEXT NOT NULL,
        model TEXT NOT NULL,
        answer TEXT NOT NULL,
        short_answer TEXT NOT NULL,
        stop TEXT NOT NULL,
        failed BOOLEAN NOT NULL,
        rounds INTEGER NOT NULL,
        diagnosis TEXT,
        sources INTEGER NOT NULL,
        wall_ms DOUBLE PRECISION NOT NULL,
        queue_ms DOUBLE PRECISION NOT NULL,
        llm_calls BIGINT NOT NULL,
        cached_calls BIGINT NOT NULL,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        trace TEXT NOT NULL
    );
    CREATE INDEX runs_created ON runs (created_ms);
    CREATE INDEX runs_strategy ON runs (strategy);
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL UNIQUE,
        created_ms BIGINT NOT NULL
    );
    "#,
    // 3: BM25 from a postings table. Ranking through the GIN index read every matching
    // chunk's `tsvector` from TOAST and cost 212 ms a query at 100k chunks
    // (docs/results/postgres.md); a posting row (lexeme, chunk, the lexeme's frequency and
    // the chunk's length in the text and in the title) in a covering index makes a query
    // one index range per query lexeme. Title and text are scored as two BM25 fields, as
    // the embedded index's tantivy does. The corpus's chunk and lexeme counts (for IDF and
    // the average lengths) are one row kept by every write, and each document keeps its
    // lexeme counts so a removal can subtract them. The GIN index had no other reader.
    concat!(
        r#"
    CREATE TABLE postings (
        lexeme TEXT NOT NULL,
        chunk_id BIGINT NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
        tf INTEGER NOT NULL,
        dl INTEGER NOT NULL,
        title_tf INTEGER NOT NULL,
        title_dl INTEGER NOT NULL,
        PRIMARY KEY (lexeme, chunk_id) INCLUDE (tf, dl, title_tf, title_dl)
    );
    CREATE INDEX postings_chunk ON postings (chunk_id);
    ALTER TABLE documents
        ADD COLUMN lexemes BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN title_lexemes BIGINT NOT NULL DEFAULT 0;
    "#,
        postings_of!(""),
        r#"
    INSERT INTO postings (lexeme, chunk_id, tf, dl, title_tf, title_dl)
    SELECT u.lexeme, u.id, u.tf, l.dl, u.ttf, l.tdl FROM u JOIN l USING (id);
    UPDATE documents d SET lexemes = s.n, title_lexemes = s.t
    FROM (
        SELECT c.doc_id, sum(p.tf) AS n, sum(p.title_tf) AS t
        FROM postings p JOIN chunks c ON c.id = p.chunk_id
        GROUP BY c.doc_id
    ) s
    WHERE s.doc_id = d.id;
    CREATE TABLE corpus_stats (
        one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
        chunks BIGINT NOT NULL,
        lexemes BIGINT NOT NULL,
        title_lexemes BIGINT NOT NULL
    );
    INSERT INTO corpus_stats (chunks, lexemes, title_lexemes)
    SELECT (SELECT count(*) FROM chunks),
           (SELECT COALESCE(sum(tf), 0) FROM postings),
           (SELECT COALESCE(sum(title_tf), 0) FROM postings);
    DROP INDEX chunks_tsv;
    "#
    ),
    // 4: chunks handed over ahead of their document's write (`Store::stage`), in the order
    // they came (`seq`), under a stage id from a sequence so that servers sharing the
    // database never mix their stages. Nothing reads them but the write that claims the
    // stage, which moves them into `chunks`; a stage no write claims (its writer died) is
    // dropped by a later write once it is a day old.
    r#"
    CREATE SEQUENCE staged_chunks_stage;
    CREATE TABLE staged_chunks (
        stage BIGINT NOT NULL,
        seq INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        section JSONB NOT NULL,
        page_from INTEGER,
        page_to INTEGER,
        byte_start BIGINT NOT NULL,
        byte_end BIGINT NOT NULL,
        token_count INTEGER NOT NULL,
        text TEXT NOT NULL,
        embedding vector NOT NULL,
        staged_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (stage, seq)
    );
    CREATE INDEX staged_chunks_age ON staged_chunks (staged_at);
    "#,
    // 5: whether a run declined to answer (`[agent] abstain`), counted by the run log's
    // statistics. Runs recorded before always answered.
    "ALTER TABLE runs ADD COLUMN abstained BOOLEAN NOT NULL DEFAULT false;",
    // 6: collections and keys scoped to them. Every document belongs to one, the default one unless ingested into
    // another, so a database from before holds one collection, `default`. A rename
    // cascades to the documents; a delete removes the documents first (the corpus
    // statistics count them), so the reference does not cascade on delete.
    r#"
    CREATE TABLE collections (
        name TEXT PRIMARY KEY,
        created_at BIGINT NOT NULL
    );
    INSERT INTO collections (name, created_at) VALUES ('default', 0);
    ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default'
        REFERENCES collections (name) ON UPDATE CASCADE;
    CREATE INDEX documents_by_collection ON documents (collection);
    -- A key's collections (NULL: an admin key, as every key made before), and the
    -- collections a run could read (NULL: every one), so runs are shown only to keys that
    -- can read all of them.
    ALTER TABLE api_keys ADD COLUMN scope JSONB;
    ALTER TABLE runs ADD COLUMN collections JSONB;
    "#,
    // 7: the audit memory, as the embedded index keeps it: one row per document version
    // written or removed, in the transaction of the change, kept after the document is
    // gone (no reference to it). It follows its collection's renames, and goes with the
    // collection's deletion. `detail` is TEXT for the reason the run log's trace is.
    r#"
    CREATE TABLE events (
        id BIGSERIAL PRIMARY KEY,
        at BIGINT NOT NULL,
        kind TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        title TEXT NOT NULL,
        detail TEXT NOT NULL,
        collection TEXT NOT NULL
            REFERENCES collections (name) ON UPDATE CASCADE ON DELETE CASCADE
    );
    CREATE INDEX events_by_time ON events (at);
    CREATE INDEX events_by_collection ON events (collection, at);
    "#,
    // 8: the entity graph, as the embedded index keeps it: entities with their aliases and
    // words (for linking), mentions (entity -> chunk) and relations (entity -> entity),
    // going with their chunks. Words and aliases are C-collated, so that a prefix is a
    // range of their index whatever the database's collation. Filled from the chunks
    // already stored when a store opens on it (`metarag_meta.graph_version`).
    r#"
    CREATE TABLE entities (
        id BIGSERIAL PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        label TEXT NOT NULL,
        df BIGINT NOT NULL DEFAULT 0
    );
    CREATE INDEX entities_by_df ON entities (df DESC, key);
    CREATE TABLE entity_aliases (
        alias TEXT COLLATE "C" NOT NULL,
        entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        PRIMARY KEY (alias, entity_id)
    );
    CREATE INDEX entity_aliases_by_entity ON entity_aliases (entity_id);
    CREATE TABLE entity_words (
        word TEXT COLLATE "C" NOT NULL,
        entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        PRIMARY KEY (word, entity_id)
    );
    CREATE INDEX entity_words_by_entity ON entity_words (entity_id);
    CREATE TABLE mentions (
        entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        chunk_id BIGINT NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
        confidence REAL NOT NULL,
        PRIMARY KEY (entity_id, chunk_id)
    );
    CREATE INDEX mentions_by_entity_confidence ON mentions (entity_id, confidence DESC, chunk_id);
    CREATE INDEX mentions_by_chunk ON mentions (chunk_id) INCLUDE (entity_id, confidence);
    CREATE TABLE relations (
        subject BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        predicate TEXT NOT NULL,
        object BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        pattern TEXT NOT NULL,
        confidence REAL NOT NULL,
        chunk_id BIGINT NOT NULL REFERENCES chunks (id) ON DELETE CASCADE
    );
    CREATE INDEX relations_by_subject ON relations (subject, confidence DESC) INCLUDE (object);
    CREATE INDEX relations_by_object ON relations (object, confidence DESC) INCLUDE (subject);
    CREATE INDEX relations_by_chunk ON relations (chunk_id);
    "#,
];

/// The newest schema version this build knows.
pub fn latest() -> i32 {
    MIGRATIONS.len() as i32
}

/// Applies the migrations the database lacks, each in its own transaction with the
/// version row; returns the versions applied.
pub async fn migrate(client: &mut Object) -> Result<Vec<i32>> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS metarag_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await?;
    let current: i32 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM metarag_schema", &[])
        .await?
        .get(0);
    if current > latest() {
        return Err(Error::SchemaTooNew {
            found: current,
            known: latest(),
        });
    }
    let mut applied = Vec::new();
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = i as i32 + 1;
        tx.batch_execute(sql).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("vector") && text.contains("extension") {
                Error::NoPgvector(e.as_db_error().map_or(text, |d| d.message().to_string()))
            } else {
                Error::Db(e)
            }
        })?;
        tx.execute(
            "INSERT INTO metarag_schema (version) VALUES ($1)",
            &[&version],
        )
        .await?;
        applied.push(version);
    }
    tx.commit().await?;
    Ok(applied)
}

/// The embedder recorded in `metarag_meta` and its dimension; `None` before the first
/// store was opened on the database.
pub async fn recorded_embedder(
    client: &impl deadpool_postgres::GenericClient,
) -> Result<Option<(String, usize)>> {
    let rows = client
        .query(
            "SELECT key, value FROM metarag_meta WHERE key IN ('embedder', 'dimension')",
            &[],
        )
        .await?;
    let get = |k: &str| {
        rows.iter()
            .find(|r| r.get::<_, &str>(0) == k)
            .map(|r| r.get::<_, String>(1))
    };
    match (get("embedder"), get("dimension")) {
        (Some(name), Some(dim)) => Ok(Some((
            name,
            dim.parse()
                .map_err(|_| Error::Corrupt(format!("metarag_meta.dimension = {dim:?}")))?,
        ))),
        _ => Ok(None),
    }
}

/// Records the embedder on first use (fixing the vector column's dimension and building
/// its HNSW index), or checks it against the recorded one.
pub async fn setup_embedder(
    client: &mut Object,
    embedder: &str,
    dimension: usize,
    hnsw_m: usize,
    hnsw_ef_construction: usize,
) -> Result<()> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    match recorded_embedder(&tx).await? {
        Some((recorded, recorded_dim)) => {
            if recorded != embedder || recorded_dim != dimension {
                return Err(Error::EmbedderMismatch {
                    recorded,
                    recorded_dim,
                    requested: embedder.to_string(),
                    requested_dim: dimension,
                });
            }
        }
        _ => {
            tx.execute(
                "INSERT INTO metarag_meta (key, value) VALUES ('embedder', $1), ('dimension', $2)",
                &[&embedder, &dimension.to_string()],
            )
            .await?;
            // The dimension is fixed now so the HNSW index can be built over the column.
            tx.batch_execute(&format!(
                "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({dimension});
                 CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)
                     WITH (m = {hnsw_m}, ef_construction = {hnsw_ef_construction});"
            ))
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
