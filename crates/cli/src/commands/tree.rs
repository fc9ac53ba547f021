//! `metarag tree show`: a saved `mcts` search tree (`ask --save-tree`, `bench
//! --save-trees`): its best path, and the tree drawn as Mermaid or SVG.

use crate::app::App;
use crate::commands::ask::load_tree;
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use metarag_agent::strategies::{NodeKind, TreeNode, best_node};
use std::path::PathBuf;
use std::process::ExitCode;

/// `metarag tree`
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: TreeCommand,
}

#[derive(Subcommand, Debug)]
enum TreeCommand {
    /// Print the best path of a saved tree, then the tree as Mermaid.
    Show {
        /// A tree written by `ask --save-tree` or `bench --save-trees`.
        file: PathBuf,
        /// Also draw it as an SVG (visits and rewards on every node) into this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
}

/// Runs `metarag tree ...`.
pub fn run(app: &App, args: Args) -> Result<ExitCode> {
    let TreeCommand::Show { file, svg } = args.command;
    let value = load_tree(&file)?;
    let tree: Vec<TreeNode> = serde_json::from_value(value["tree"].clone())?;
    let path = path_to(&tree, best_node(&tree));
    if app.json {
        crate::output::print_json(&serde_json::json!({"best_path": path, "tree": tree}))?;
    } else {
        println!("best path ({} nodes of {}):", path.len(), tree.len());
        for &i in &path {
            println!("  {}", label(&tree[i]));
        }
        println!();
        print!("{}", mermaid(&tree, &path));
    }
    if let Some(out) = svg {
        std::fs::write(&out, draw_svg(&tree, &path))
            .map_err(|e| crate::app::UserError(format!("{}: {e}", out.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Node ids from the root to `to`.
fn path_to(tree: &[TreeNode], to: usize) -> Vec<usize> {
    let mut path = vec![to];
    while let Some(p) = tree[*path.last().unwrap_or(&0)].parent {
        path.push(p);
    }
    path.reverse();
    path
}

fn kind(k: NodeKind) -> &'static str {
    match k {
        NodeKind::UserQuestion => "question",
        NodeKind::SubQa => "sub-question",
        NodeKind::FinalAnswer => "final answer",
    }
}

/// One line: kind, content, the fact found, visits, mean value, reward.
fn label(n: &TreeNode) -> String {
    let mean = if n.visits == 0 {
        0.0
    } else {
        n.value / f64::from(n.visits)
    };
    let fact = match (n.kind, n.memory.facts.last()) {
        (NodeKind::SubQa, Some(f)) => format!(" -> {}", f.answer),
        _ => String::new(),
    };
    let reward = n.reward.map_or("-".to_string(), |r| format!("{r:.2}"));
    format!(
        "[{}] {}: {}{fact} (visits {}, mean {mean:.2}, reward {reward})",
        n.id,
        kind(n.kind),
        n.content,
        n.visits
    )
}

/// Mermaid flowchart, the best path's nodes highlighted.
fn mermaid(tree: &[TreeNode], path: &[usize]) -> String {
    let esc = |t: &str| t.replace('"', "#quot;");
    let mut out = String::from("flowchart TD\n");
    for n in tree {
        out.push_str(&format!("    n{}[\"{}\"]\n", n.id, esc(&label(n))));
    }
    for n in tree {
        if let Some(p) = n.parent {
            out.push_str(&format!("    n{p} --> n{}\n", n.id));
        }
    }
    let best: Vec<String> = path.iter().map(|i| format!("n{i}")).collect();
    out.push_str("    classDef best stroke-width:3px\n");
    out.push_str(&format!("    class {} best\n", best.join(",")));
    out
}

/// The tree as SVG: one row per level, leaves spread evenly, each box with the node's
/// id, kind, visits and reward; the best path drawn thick.
fn draw_svg(tree: &[TreeNode], path: &[usize]) -> String {
    const W: f64 = 170.0;
    const H: f64 = 54.0;
    const GAP_Y: f64 = 40.0;
    // x of each node: leaves in depth-first order, parents centred over their children.
    let mut x = vec![0.0; tree.len()];
    let mut level = vec![0usize; tree.len()];
    let mut next_leaf = 0.0;
    fn place(
        tree: &[TreeNode],
        i: usize,
        depth: usize,
        x: &mut [f64],
        level: &mut [usize],
        next: &mut f64,
    ) {
        level[i] = depth;
        if tree[i].children.is_empty() {
            x[i] = *next;
            *next += 1.0;
            return;
        }
        for &c in &tree[i].children {
            place(tree, c, depth + 1, x, level, next);
        }
        let xs: Vec<f64> = tree[i].children.iter().map(|&c| x[c]).collect();
        x[i] = xs.iter().sum::<f64>() / xs.len() as f64;
    }
    place(tree, 0, 0, &mut x, &mut level, &mut next_leaf);
    let levels = level.iter().max().copied().unwrap_or(0) + 1;
    let width = (next_leaf.max(1.0)) * (W + 20.0) + 20.0;
    let height = levels as f64 * (H + GAP_Y) + 20.0;
    let cx = |i: usize| 20.0 + x[i] * (W + 20.0) + W / 2.0;
    let cy = |i: usize| 20.0 + level[i] as f64 * (H + GAP_Y);
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let short = |t: &str| {
        let mut s: String = t.chars().take(26).collect();
        if t.chars().count() > 26 {
            s.push('…');
        }
        s
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    for n in tree {
        if let Some(p) = n.parent {
            let best = path.contains(&n.id) && path.contains(&p);
            out.push_str(&format!(
                "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#555\" stroke-width=\"{}\"/>\n",
                cx(p),
                cy(p) + H,
                cx(n.id),
                cy(n.id),
                if best { 3 } else { 1 }
            ));
        }
    }
    for n in tree {
        let fill = match n.kind {
            NodeKind::UserQuestion => "#e8eef7",
            NodeKind::SubQa => "#f4f4f4",
            NodeKind::FinalAnswer => "#e9f5e9",
        };
        let best = path.contains(&n.id);
        let reward = n.reward.map_or("-".to_string(), |r| format!("{r:.2}"));
        out.push_str(&format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{W}\" height=\"{H}\" rx=\"6\" fill=\"{fill}\" stroke=\"#333\" stroke-width=\"{}\"><title>{}</title></rect>\n",
            cx(n.id) - W / 2.0,
            cy(n.id),
            if best { 2.5 } else { 1.0 },
            esc(&label(n))
        ));
        for (k, line) in [
            format!("[{}] {}", n.id, kind(n.kind)),
            short(&n.content),
            format!("visits {} · reward {reward}", n.visits),
        ]
        .iter()
        .enumerate()
        {
            out.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                cx(n.id),
                cy(n.id) + 16.0 + 14.0 * k as f64,
                esc(line)
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}
