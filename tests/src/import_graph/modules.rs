//! A crate's module tree, read from `lib.rs` along its `mod` declarations, and the
//! resolution of a `crate::` path to the file that defines what it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::refs::FileRefs;

/// One module's file: where it is and what it says.
#[derive(Debug)]
pub struct ModFile {
    /// The file, relative to the crate's `src`, with `/` separators (`op/mod.rs`).
    pub name: String,
    /// What it declares, binds, defines and names.
    pub refs: FileRefs,
}

impl ModFile {
    /// Whether the file only declares and re-exports for its folder (`lib.rs`, `mod.rs`).
    pub fn is_root(&self) -> bool {
        self.name == "lib.rs" || self.name.ends_with("/mod.rs")
    }
}

/// Every module file of a crate, keyed by module path.
#[derive(Debug)]
pub struct Crate {
    /// The files by module path.
    pub files: BTreeMap<Vec<String>, ModFile>,
}

impl Crate {
    /// Reads the crate whose sources are in `src`, starting at `src/lib.rs`.
    pub fn read(src: &Path) -> Result<Crate, String> {
        let mut files = BTreeMap::new();
        let mut todo = vec![(src.join("lib.rs"), Vec::new())];
        while let Some((path, module)) = todo.pop() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let refs = FileRefs::read(&text);
            let name = path
                .strip_prefix(src)
                .map_err(|_| format!("{} is outside {}", path.display(), src.display()))?
                .to_string_lossy()
                .replace('\\', "/");
            for decl in &refs.mods {
                let mut child = module.clone();
                child.push(decl.name.clone());
                todo.push((child_file(&path, &decl.name, decl.path.as_deref())?, child));
            }
            files.insert(module, ModFile { name, refs });
        }
        Ok(Crate { files })
    }

    /// The file holding what `crate::path` names: through modules to the item, through
    /// `use` bindings (re-exports) to where the item is defined. `None` where the path ends
    /// at a module declared in a `lib.rs`/`mod.rs` (a declaration, not an item) or leaves
    /// the crate.
    pub fn resolve(&self, path: &[String]) -> Option<&ModFile> {
        self.resolve_in(Vec::new(), path, 0)
    }

    fn resolve_in(
        &self,
        mut module: Vec<String>,
        path: &[String],
        hops: usize,
    ) -> Option<&ModFile> {
        // A re-export that names itself (or a very long chain) ends the search.
        if hops > 32 {
            return None;
        }
        for (k, seg) in path.iter().enumerate() {
            let here = self.files.get(&module)?;
            let mut child = module.clone();
            child.push(seg.clone());
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            if seg == "self" {
                continue;
            }
            if seg == "super" {
                module.pop();
                continue;
            }
            // An item of `here`: bound by a `use` (follow it), defined here, or behind a glob.
            let mut uses = here.refs.uses.iter().filter(|u| u.top_level);
            if let Some(leaf) = uses.find(|u| u.binds.as_deref() == Some(seg)) {
                return self.follow(&module, &leaf.path, &path[k + 1..], hops);
            }
            if here.refs.defines.contains(seg) {
                return Some(here);
            }
            for glob in here
                .refs
                .uses
                .iter()
                .filter(|u| u.top_level && u.binds.is_none())
            {
                let mut target = glob.path.clone();
                target.push(seg.clone());
                if let Some(found) = self.follow(&module, &target, &path[k + 1..], hops) {
                    if found.refs.defines.contains(seg) {
                        return Some(found);
                    }
                }
            }
            // Made by a macro, or a variant or method: it lives in this file.
            return Some(here);
        }
        // The path names a module: a file of its own, or a declaration in its parent.
        let file = self.files.get(&module)?;
        (!file.is_root()).then_some(file)
    }

    /// Resolves a `use` target `used` (then `rest`) as written in `module`.
    fn follow(
        &self,
        module: &[String],
        used: &[String],
        rest: &[String],
        hops: usize,
    ) -> Option<&ModFile> {
        let start = match used.first().map(String::as_str) {
            Some("crate" | "$crate") => (Vec::new(), &used[1..]),
            Some("self" | "super") => (module.to_vec(), used),
            // A child module by its bare name; otherwise another crate.
            Some(first) => {
                let mut child = module.to_vec();
                child.push(first.to_string());
                if !self.files.contains_key(&child) {
                    return None;
                }
                (module.to_vec(), used)
            }
            None => return None,
        };
        let mut full = start.1.to_vec();
        full.extend_from_slice(rest);
        self.resolve_in(start.0, &full, hops + 1)
    }
}

/// The file of module `name` declared in `parent` (a `#[path]` is relative to the
/// declaring file's folder).
fn child_file(parent: &Path, name: &str, path_attr: Option<&str>) -> Result<PathBuf, String> {
    let dir = parent.parent().unwrap_or(Path::new("."));
    if let Some(p) = path_attr {
        return Ok(dir.join(p));
    }
    let stem = parent.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if stem == "lib" || stem == "mod" || stem == "main" {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let (flat, nested) = (
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    );
    if flat.exists() {
        Ok(flat)
    } else if nested.exists() {
        Ok(nested)
    } else {
        Err(format!(
            "module {name} declared in {} has no file ({} or {})",
            parent.display(),
            flat.display(),
            nested.display()
        ))
    }
}
