//! Groups: the nodes of a Zarr v3 hierarchy that hold attributes and other nodes (an OME-Zarr
//! image is a group with `multiscales` attributes and one array per resolution level). Also
//! what creating any node at a path checks first: that nothing is there, or that what is
//! there may be replaced.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::metadata::{read_document, Attributes};
use crate::storage::store::{Prefixed, Store};
use serde_json::Value;

/// A Zarr v3 group at a path of a store.
pub struct Group<S: Store> {
    node: Prefixed<S>,
    attributes: Attributes,
}

impl<S: Store> Group<S> {
    /// Create a group at node `path` of `store` (`""` for its root; checked by
    /// [`crate::storage::store::node_path`]) with `attributes`: write `PATH/zarr.json` as a new object.
    /// A node already there is refused unless `overwrite`, as [`Array::create_at`] does.
    ///
    /// Errors: [`Error::InvalidArgument`] (the path), [`Error::InvalidState`] (a node exists and
    /// not `overwrite`), [`Error::Unsupported`] (overwriting a group in a store that cannot
    /// list), the store's errors.
    pub fn create(store: S, path: &str, attributes: Attributes, overwrite: bool) -> Result<Self> {
        let node = Prefixed::new(store, path)?;
        make_room(&node, overwrite)?;
        let group = Group { node, attributes };
        group.write()?;
        Ok(group)
    }

    /// Open the group at node `path` of `store`.
    ///
    /// Errors: [`Error::InvalidArgument`] (the path), [`Error::InvalidMetadata`] (no group
    /// there, naming the path), the store's errors.
    pub fn open(store: S, path: &str) -> Result<Self> {
        let node = Prefixed::new(store, path)?;
        let not_group = || {
            Error::metadata(format!(
                "no group at {}",
                crate::storage::store::shown_path(path)
            ))
        };
        let text = read_document(&node, "zarr.json")?.ok_or_else(not_group)?;
        let v: Value = serde_json::from_slice(&text)
            .map_err(|e| crate::metadata::json_error(&format!("{path}/zarr.json"), &e))?;
        if v.get("node_type").and_then(Value::as_str) != Some("group") {
            return Err(not_group());
        }
        let attributes = match v.get("attributes").and_then(Value::as_object) {
            Some(map) => Attributes::from_map(map)?,
            None => Attributes::new(),
        };
        Ok(Group { node, attributes })
    }

    /// The group's attributes.
    pub fn attributes(&self) -> &Attributes {
        &self.attributes
    }

    /// Replace the attributes and write `zarr.json` (a new object).
    ///
    /// Errors: the store's (the attributes in memory are unchanged then).
    pub fn set_attributes(&mut self, attributes: Attributes) -> Result<()> {
        let old = std::mem::replace(&mut self.attributes, attributes);
        self.write().inspect_err(|_| self.attributes = old.clone())
    }

    /// The group's path in its store (`""` at the root).
    pub fn path(&self) -> &str {
        self.node.path()
    }

    fn write(&self) -> Result<()> {
        let doc = format!(
            "{{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n  \"attributes\": {}\n}}",
            self.attributes.as_text()
        );
        self.node.set("zarr.json", doc.as_bytes())
    }
}

/// Check that a node may be created at `node`: nothing there (no `zarr.json`, `.zarray` or
/// `.zgroup`), or, with `overwrite`, remove what is: an array's stored shards and metadata,
/// or everything stored below a group.
pub(crate) fn make_room<S: Store>(node: &Prefixed<S>, overwrite: bool) -> Result<()> {
    let path = node.path();
    let found = ["zarr.json", ".zarray", ".zgroup"]
        .into_iter()
        .find_map(|k| match read_document(node, k) {
            Ok(Some(text)) => Some(Ok((k, text))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        })
        .transpose()?;
    let Some((doc, text)) = found else {
        return Ok(());
    };
    let kind = match doc {
        ".zarray" => "array",
        ".zgroup" => "group",
        _ => match serde_json::from_slice::<Value>(&text)
            .ok()
            .and_then(|v| v.get("node_type")?.as_str().map(str::to_string))
        {
            Some(t) if t == "group" => "group",
            _ => "array",
        },
    };
    if !overwrite {
        return Err(Error::InvalidState(format!(
            "{} already holds {} {kind} ({doc}); overwrite to replace it",
            crate::storage::store::shown_path(path),
            if kind == "array" { "an" } else { "a" },
        )));
    }
    if kind == "array" {
        // Its own shards; when its document no longer parses, everything below it (as for a
        // group), since its shard keys are unknown.
        match Array::open(node) {
            Ok(old) => {
                for coords in old.stored_shards()? {
                    node.delete(&old.shard_key(&coords))?;
                }
            }
            Err(_) => remove_all(node, path)?,
        }
    } else {
        remove_all(node, path)?;
    }
    for k in ["zarr.json", ".zarray", ".zgroup", ".zattrs"] {
        node.delete(k)?;
    }
    Ok(())
}

/// Delete every object below `node` (a store that lists only).
fn remove_all<S: Store>(node: &Prefixed<S>, path: &str) -> Result<()> {
    let keys = node.list_prefix("")?.ok_or_else(|| {
        Error::Unsupported(format!(
            "overwriting {} removes everything below it, which needs a store that lists",
            crate::storage::store::shown_path(path)
        ))
    })?;
    // Deepest first: a directory store lists its directories too, deleted once emptied.
    let mut keys = keys;
    keys.sort_by_key(|k| std::cmp::Reverse(k.matches('/').count()));
    for key in &keys {
        node.delete(key)?;
    }
    Ok(())
}
