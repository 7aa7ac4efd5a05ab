//! Structure rules the compiler does not check: no function in src/ longer
//! than `MAX_LINES`, and every repo path docs/ARCHITECTURE.md names exists.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const MAX_LINES: usize = 150;

/// Generated code, exempt from the length rule.
const GENERATED: [&str; 2] = [
    "src/models/onnx/proto/onnx.rs",
    "src/models/tflite/schema_generated.rs",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Whether a `cfg` predicate holds only under `test` (`cfg(test)`,
/// `cfg(all(test, ..))`); `not(test)` does not count.
fn mentions_test(tokens: TokenStream) -> bool {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            TokenTree::Ident(ident) if ident == "not" => {
                iter.next();
            }
            TokenTree::Ident(ident) if ident == "test" => return true,
            TokenTree::Group(group) if mentions_test(group.stream()) => return true,
            _ => {}
        }
    }
    false
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && matches!(&attr.meta, syn::Meta::List(list) if mentions_test(list.tokens.clone()))
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// A function longer than `MAX_LINES`, reported as `path:line name (N lines)`.
struct Long {
    at: String,
    name: String,
    lines: usize,
}

/// Walks one file's items: measures functions, skips `#[cfg(test)]` items,
/// and collects the files its `mod x;` lines bring in.
struct FileWalk<'a> {
    file: String,
    /// Where `mod x;` looks for x.rs / x/mod.rs (deeper inside inline modules).
    dir: PathBuf,
    /// Where a `#[path]` attribute is resolved from.
    file_dir: PathBuf,
    /// The file is only compiled for tests: walked for its `mod` lines only.
    test_only: bool,
    functions: usize,
    long: &'a mut Vec<Long>,
    /// Files its `mod x;` lines bring in, and whether only for tests.
    children: Vec<(PathBuf, bool)>,
}

impl FileWalk<'_> {
    fn measure(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, block: &syn::Block) {
        if self.test_only || is_test_only(attrs) {
            return;
        }
        self.functions += 1;
        let start = syn::spanned::Spanned::span(sig).start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end + 1 - start;
        if lines > MAX_LINES {
            self.long.push(Long {
                at: format!("{}:{start}", self.file),
                name: sig.ident.to_string(),
                lines,
            });
        }
    }
}

impl<'ast> Visit<'ast> for FileWalk<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.measure(&f.attrs, &f.sig, &f.block);
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.measure(&f.attrs, &f.sig, &f.block);
        if !is_test_only(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.measure(&f.attrs, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let test_only = self.test_only || is_test_only(&m.attrs);
        let name = m.ident.to_string();
        match (&m.content, path_attr(&m.attrs)) {
            (Some(_), _) if test_only => {}
            (Some(_), _) => {
                let inner = self.dir.join(&name);
                let outer = std::mem::replace(&mut self.dir, inner);
                syn::visit::visit_item_mod(self, m);
                self.dir = outer;
            }
            (None, Some(path)) => self.children.push((self.file_dir.join(path), test_only)),
            (None, None) => {
                let flat = self.dir.join(format!("{name}.rs"));
                let nested = self.dir.join(&name).join("mod.rs");
                let file = if flat.exists() { flat } else { nested };
                self.children.push((file, test_only));
            }
        }
    }
}

/// Measures every function reachable from the crate roots through `mod`
/// lines, outside `#[cfg(test)]` items and generated files. Returns the
/// number of functions measured and the files walked (test-only ones too).
fn walk_crate(long: &mut Vec<Long>) -> (usize, BTreeSet<PathBuf>) {
    let src = root().join("src");
    let mut queue = vec![(src.join("lib.rs"), false)];
    for entry in fs::read_dir(src.join("bin")).expect("src/bin") {
        let path = entry.expect("src/bin entry").path();
        queue.push((
            if path.is_dir() {
                path.join("main.rs")
            } else {
                path
            },
            false,
        ));
    }
    let mut walked = BTreeSet::new();
    let mut functions = 0;
    while let Some((path, test_only)) = queue.pop() {
        if !walked.insert(path.clone()) {
            continue;
        }
        let file = relative(&path);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let file_dir = path.parent().expect("a file's folder").to_path_buf();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = match stem {
            "lib" | "main" | "mod" => file_dir.clone(),
            _ => file_dir.join(stem),
        };
        let mut walk = FileWalk {
            file: file.clone(),
            dir,
            file_dir,
            test_only,
            functions: 0,
            long,
            children: Vec::new(),
        };
        walk.visit_file(&parsed);
        queue.extend(walk.children);
        if !GENERATED.contains(&file.as_str()) {
            functions += walk.functions;
        } else {
            long.retain(|l| !l.at.starts_with(&format!("{file}:")));
        }
    }
    (functions, walked)
}

#[test]
fn no_function_over_150_lines() {
    let mut long = Vec::new();
    let (functions, walked) = walk_crate(&mut long);
    assert!(
        functions > 1800,
        "measured only {functions} functions in {} files",
        walked.len()
    );
    let report: Vec<String> = long
        .iter()
        .map(|l| format!("{} {} ({} lines)", l.at, l.name, l.lines))
        .collect();
    assert!(
        report.is_empty(),
        "{} functions over {MAX_LINES} lines (of {functions}):\n{}",
        report.len(),
        report.join("\n")
    );
}

/// Every `.rs` file under src/ is reached from a crate root through `mod`
/// lines (test-only ones included), so the length rule misses no file.
#[test]
fn every_source_file_is_walked() {
    let (_, walked) = walk_crate(&mut Vec::new());
    let mut all = Vec::new();
    let mut dirs = vec![root().join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("src folder") {
            let path = entry.expect("src entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                all.push(path);
            }
        }
    }
    let unwalked: Vec<String> = all
        .iter()
        .filter(|p| !walked.contains(*p))
        .map(|p| relative(p))
        .collect();
    assert!(all.len() > 200, "found only {} files under src/", all.len());
    assert!(
        unwalked.is_empty(),
        "files under src/ that no crate root reaches:\n{}",
        unwalked.join("\n")
    );
}

/// What docs/ARCHITECTURE.md names as a path, and whether it exists.
///
/// The rule: an inline code span (outside fenced blocks) is a path when it
/// contains `/` or ends in .rs, .wgsl, .sh, .py, .txt or .md, and holds no
/// spaces, `:` or `(`. It must exist relative to the repo root or to src/
/// (a trailing `/` names a folder). A bare file name (`gather.rs`) must be
/// a file somewhere in the repo. A template (`ml/gpu/<op>.rs`) must have its
/// fixed folder (`ml/gpu/`). Install locations (`$XDG_DATA_DIRS/wgnn`,
/// `PREFIX/share/wgnn`: a `$` or an upper-case first component) and a bare
/// extension (`.rs`) are not repo paths.
fn doc_paths(text: &str) -> Vec<String> {
    const EXTENSIONS: [&str; 6] = [".rs", ".wgsl", ".sh", ".py", ".txt", ".md"];
    let mut paths = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            let looks = span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e));
            let code = span.contains([' ', ':', '(']);
            let first = span.split('/').next().unwrap_or("");
            let install = span.contains('$')
                || (first.len() > 1 && first.chars().all(|c| c.is_ascii_uppercase()));
            if looks && !code && !install && !span.starts_with('.') {
                paths.push(span.to_string());
            }
        }
    }
    paths
}

fn file_names(dir: &Path, names: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                file_names(&path, names);
            }
        } else {
            names.insert(name);
        }
    }
}

#[test]
fn architecture_paths_exist() {
    let root = root();
    let text = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let paths = doc_paths(&text);
    let mut names = BTreeSet::new();
    file_names(&root, &mut names);
    let exists = |p: &str| {
        let folder = p.ends_with('/');
        [root.join(p), root.join("src").join(p)].iter().any(|full| {
            if folder {
                full.is_dir()
            } else {
                full.exists()
            }
        })
    };
    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| {
            if let Some(at) = p.find('<') {
                let fixed = &p[..at];
                !fixed.is_empty() && !exists(fixed)
            } else if p.contains('/') {
                !exists(p)
            } else {
                !names.contains(p.as_str())
            }
        })
        .collect();
    assert!(paths.len() >= 60, "found only {} paths", paths.len());
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names paths that do not exist:\n{}",
        missing
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
