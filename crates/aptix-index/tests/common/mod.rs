//! The multi-language fixture workspace the integration tests index, and helpers.
#![allow(dead_code)]

use std::path::Path;

use aptix_index::{IndexConfig, NoProgress, WorkspaceIndex};
use aptix_rag::Chunk;
use tempfile::TempDir;

pub(crate) const RUST: &str = r#"use std::fmt;

/// Keeps track of invoices.
pub struct InvoiceManager {
    sent: u32,
    pending: Vec<String>,
    name: String,
}

impl InvoiceManager {
    /// Sends one invoice.
    pub fn send_invoice(&mut self, to: &str) -> bool {
        self.sent += 1;
        self.pending.push(to.to_owned());
        let ok = !to.is_empty();
        ok
    } // end send_invoice

    pub fn parse_http_response(body: &str) -> Option<u32> {
        let trimmed = body.trim();
        let first = trimmed.lines().next()?;
        let code = first.split(' ').nth(1)?;
        code.parse().ok()
    } // end parse_http_response
} // end impl

fn helper_total(values: &[u32]) -> u32 {
    let mut total = 0;
    for v in values {
        total += v;
    }
    total
} // end helper_total
"#;

pub(crate) const PYTHON: &str = r#"import os


class InvoiceManager:
    """Manages invoices."""

    def send_invoice(self, to):
        count = 0
        for item in to:
            count += 1
        return count

    def parse_http_response(self, body):
        first = body.splitlines()[0]
        parts = first.split(" ")
        code = parts[1]
        return int(code)


@staticmethod
def helper_total(values):
    total = 0
    for v in values:
        total += v
    return total
"#;

pub(crate) const TYPESCRIPT: &str = r#"import { Http } from "./http";

export class InvoiceManager {
  private sent = 0;

  sendInvoice(to: string): boolean {
    this.sent += 1;
    const ok = to.length > 0;
    console.log(ok);
    return ok;
  } // end sendInvoice

  parseHttpResponse(body: string): number {
    const first = body.split("\n")[0];
    const parts = first.split(" ");
    const code = parts[1];
    return Number(code);
  } // end parseHttpResponse
} // end class

export function helperTotal(values: number[]): number {
  let total = 0;
  for (const v of values) {
    total += v;
  }
  return total;
} // end helperTotal
"#;

pub(crate) const TSX: &str = r#"export function InvoiceView(props: { id: string }) {
  const label = `Invoice ${props.id}`;
  const style = { color: "red" };
  console.log(label);
  return <div style={style}>{label}</div>;
} // end InvoiceView

export const InvoiceList = (props: { ids: string[] }) => {
  const items = props.ids.map((id) => <InvoiceView id={id} />);
  const count = items.length;
  console.log(count);
  return <ul>{items}</ul>;
}; // end InvoiceList
"#;

pub(crate) const JAVASCRIPT: &str = r#"const http = require("http");

class InvoiceManager {
  sendInvoice(to) {
    this.sent = (this.sent || 0) + 1;
    const ok = to.length > 0;
    console.log(ok);
    return ok;
  } // end sendInvoice
} // end class

function helperTotal(values) {
  let total = 0;
  for (const v of values) {
    total += v;
  }
  return total;
} // end helperTotal
"#;

pub(crate) const GO: &str = r#"package billing

import "strings"

type InvoiceManager struct {
	Sent    int
	Pending []string
	Name    string
} // end type

func (m *InvoiceManager) SendInvoice(to string) bool {
	m.Sent++
	m.Pending = append(m.Pending, to)
	ok := strings.TrimSpace(to) != ""
	return ok
} // end SendInvoice

func HelperTotal(values []int) int {
	total := 0
	for _, v := range values {
		total += v
	}
	return total
} // end HelperTotal
"#;

pub(crate) const JAVA: &str = r#"package billing;

import java.util.List;

public class InvoiceManager {
    private int sent;

    public boolean sendInvoice(String to) {
        sent += 1;
        boolean ok = !to.isEmpty();
        System.out.println(ok);
        return ok;
    } // end sendInvoice

    public int parseHttpResponse(String body) {
        String first = body.split("\n")[0];
        String[] parts = first.split(" ");
        String code = parts[1];
        return Integer.parseInt(code);
    } // end parseHttpResponse
} // end class
"#;

pub(crate) const CSHARP: &str = r#"using System;

namespace Billing.Managers
{
    public class InvoiceManager
    {
        private int sent;

        public bool SendInvoiceEmail(string to)
        {
            sent += 1;
            var ok = to.Length > 0;
            Console.WriteLine(ok);
            return ok;
        } // end SendInvoiceEmail

        public int ParseHttpResponse(string body)
        {
            var first = body.Split('\n')[0];
            var parts = first.Split(' ');
            var code = parts[1];
            return int.Parse(code);
        } // end ParseHttpResponse
    } // end class
}
"#;

pub(crate) const NOTES: &str = "# Notes\n\nHow we parse http response codes from the billing gateway.\n\nThe gateway answers slowly.\n";

/// The source files of the fixture, by relative path.
pub(crate) const SOURCES: &[(&str, &str)] = &[
    ("src/billing/invoice.rs", RUST),
    ("py/invoice.py", PYTHON),
    ("web/invoice.ts", TYPESCRIPT),
    ("web/Invoice.tsx", TSX),
    ("web/legacy.js", JAVASCRIPT),
    ("go/invoice.go", GO),
    ("java/InvoiceManager.java", JAVA),
    ("Billing/Managers/InvoiceManager.cs", CSHARP),
    ("docs/notes.md", NOTES),
];

/// Files that must never be indexed, each excluded by a different rule.
pub(crate) const EXCLUDED: &[(&str, &str)] = &[
    ("ignored_by_gitignore.rs", "fn gitignored_marker() {}\n"),
    ("generated/out.rs", "fn generated_marker() {}\n"),
    ("scratch.txt", "dotignore_marker\n"),
    ("secret/keys.txt", "aptixignore_marker\n"),
    (".env", "hidden_marker\n"),
    ("target/debug/build.rs", "fn target_marker() {}\n"),
    (
        "node_modules/pkg/index.js",
        "function nodeModulesMarker() {}\n",
    ),
];

/// A fresh workspace (not a git repository) holding the fixture.
pub(crate) fn workspace() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("fixture-ws")
        .tempdir()
        .unwrap();
    for (path, content) in SOURCES.iter().chain(EXCLUDED) {
        write(dir.path(), path, content);
    }
    write(
        dir.path(),
        ".gitignore",
        "ignored_by_gitignore.rs\ngenerated/\n",
    );
    write(dir.path(), ".ignore", "scratch.txt\n");
    write(dir.path(), ".aptixignore", "secret/\n");
    dir
}

pub(crate) fn write(root: &Path, path: &str, content: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
}

/// Opens and refreshes an index of `root`.
pub(crate) fn indexed(root: &Path, config: IndexConfig) -> WorkspaceIndex {
    let index = WorkspaceIndex::open(root, config).unwrap();
    index.refresh(&NoProgress).unwrap();
    index
}

/// The 1-based number of the only line containing `needle`.
pub(crate) fn line_of(text: &str, needle: &str) -> u32 {
    let found: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(found.len(), 1, "{needle:?} must be on exactly one line");
    found[0] as u32
}

/// Every symbol a chunk lists.
pub(crate) fn symbols(chunk: &Chunk) -> Vec<String> {
    match chunk.metadata.get("symbols") {
        Some(all) => all.split(',').map(str::to_owned).collect(),
        None => chunk.metadata.get("symbol").into_iter().cloned().collect(),
    }
}

/// Checks that `chunk` holds exactly lines `start..=end` of `text`.
pub(crate) fn assert_exact(text: &str, chunk: &Chunk) {
    let lines: Vec<&str> = text.split('\n').collect();
    let start = chunk.lines.start() as usize;
    let end = chunk.lines.end() as usize;
    let expected = lines[start - 1..end]
        .iter()
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let actual = chunk.content.replace("\r\n", "\n");
    assert_eq!(actual, expected, "{} {}", chunk.path, chunk.lines);
}
