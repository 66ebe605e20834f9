//! Packs three retrieved chunks into a token budget and prints the `[CONTEXT]` block
//! the model would receive. Runs offline: `cargo run -p aptix-rag --example render_context`.

use aptix_rag::{
    Chunk, ChunkId, LineSpan, RagError, ScoredChunk, TokenCounter, dedupe_overlapping,
    language_for_path, pack, render_context_block,
};

fn scored(
    id: &str,
    path: &str,
    lines: (u32, u32),
    score: f32,
    content: &str,
) -> Result<ScoredChunk, RagError> {
    Ok(ScoredChunk {
        chunk: Chunk {
            id: ChunkId::new(id),
            path: path.to_owned(),
            lines: LineSpan::new(lines.0, lines.1)?,
            language: language_for_path(path).to_owned(),
            content: content.to_owned(),
            metadata: Default::default(),
        },
        score,
    })
}

/// Small enough that the lowest-ranked chunk left after de-duplication does not fit.
const BUDGET: usize = 180;

fn main() -> Result<(), RagError> {
    let ranked = vec![
        scored(
            "ctx_1",
            "Billing/Managers/InvoiceManager.cs",
            (40, 45),
            0.92,
            "public class InvoiceManager\r\n{\r\n    public void SendInvoiceEmail(Invoice invoice) {\r\n        _mailer.Send(invoice.CustomerEmail, Render(invoice));\r\n    }\r\n}",
        )?,
        // Overlaps ctx_1 (lines 40-45 of the same file) and ranks lower: removed.
        scored(
            "ctx_9",
            "Billing/Managers/InvoiceManager.cs",
            (44, 60),
            0.40,
            "    }\n}",
        )?,
        // Markdown with its own code fence: rendered inside a longer fence.
        scored(
            "ctx_2",
            "docs/billing.md",
            (1, 7),
            0.81,
            "# Invoices\n\nSend one with:\n\n```bash\naptix ask \"send invoice 42\"\n```",
        )?,
        scored(
            "ctx_3",
            "web/src/invoice.service.ts",
            (10, 12),
            0.55,
            "export function send(id: number): Promise<void> {\n  return http.post(`/api/invoices/${id}/send`);\n}",
        )?,
    ];

    let counter = TokenCounter::o200k()?;
    let packed = pack(dedupe_overlapping(ranked), BUDGET, &counter);
    println!(
        "kept {} chunks in {} o200k tokens (budget {BUDGET}); dropped {:?}\n",
        packed.kept.len(),
        packed.tokens,
        packed.dropped
    );
    if let Some(block) = render_context_block(&packed.kept) {
        print!("{block}");
    }
    Ok(())
}
