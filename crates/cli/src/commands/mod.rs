//! One module per command: its arguments (`Args`, or `Command` for a command with
//! subcommands) and `run(app, args)`. What several commands build (the index, the
//! retriever, the chat model, the registry) is on [`crate::app::App`].

pub mod ask;
pub mod audit;
pub mod bench;
pub mod cache;
pub mod chat;
pub mod collections;
pub mod compact;
pub mod config;
pub mod context;
pub mod docs;
pub mod graph;
pub mod import;
pub mod ingest;
pub mod keys;
pub mod mcp;
pub mod migrate;
pub mod models;
pub mod runs;
pub mod search;
pub mod serve;
pub mod serve_llm;
pub mod strategies;
pub mod tree;
