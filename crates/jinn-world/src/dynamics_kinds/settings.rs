//! A dynamics kind's own settings behind one object type ([`KindSettings`]), and the kind with
//! its settings ([`KindConfig`]), the part of the `model` section the `kind` key selects.

use super::DynamicsKind;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::any::Any;
use std::fmt::Debug;

/// The settings struct of one dynamics kind (`MaskGitConfig`, `DiffusionConfig`, …) as an
/// object, so that the set of kinds stays open. Every cloneable, comparable, serialisable
/// struct is one.
pub trait KindSettings: Any + Debug + Send + Sync {
    /// The settings as `model` keys and values.
    fn to_fields(&self) -> Map<String, Value>;
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn KindSettings>;
    /// Whether `other` holds the same type and values.
    fn same_as(&self, other: &dyn KindSettings) -> bool;
    /// For downcasting to the concrete struct.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the concrete struct, to change it.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Debug + Clone + PartialEq + Serialize + Send + Sync> KindSettings for T {
    fn to_fields(&self) -> Map<String, Value> {
        match jinn_train::config::to_json(self) {
            Value::Object(fields) => fields,
            other => panic!("a dynamics kind's settings serialise to an object, not {other}"),
        }
    }
    fn clone_box(&self) -> Box<dyn KindSettings> {
        Box::new(self.clone())
    }
    fn same_as(&self, other: &dyn KindSettings) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// [`DynamicsKindEntry::default_settings`](super::DynamicsKindEntry) of a settings struct.
pub fn default_settings<T: KindSettings + Default>() -> Box<dyn KindSettings> {
    Box::new(T::default())
}

/// [`DynamicsKindEntry::parse_settings`](super::DynamicsKindEntry) of a settings struct.
pub fn parse_settings<T: KindSettings + serde::de::DeserializeOwned>(
    fields: Map<String, Value>,
) -> Result<Box<dyn KindSettings>, String> {
    let settings: T = serde_json::from_value(Value::Object(fields)).map_err(|e| e.to_string())?;
    Ok(Box::new(settings))
}

/// A dynamics kind with the settings only it reads; serialised as `kind = "…"` beside them.
#[derive(Debug)]
pub struct KindConfig {
    kind: DynamicsKind,
    settings: Box<dyn KindSettings>,
}

impl KindConfig {
    /// `kind` with `settings`, which must be the kind's own settings type.
    ///
    /// # Panics
    /// When `settings` is not of the type `kind`'s registry row reads (a programming error).
    pub fn new(kind: DynamicsKind, settings: impl KindSettings) -> Self {
        let settings: Box<dyn KindSettings> = Box::new(settings);
        Self::checked(kind, settings)
    }

    /// `kind` with its default settings.
    pub fn default_for(kind: DynamicsKind) -> Self {
        KindConfig { kind, settings: (kind.entry().default_settings)() }
    }

    /// `kind` with settings read from their `model` keys (see
    /// [`DynamicsKindEntry::parse_settings`](super::DynamicsKindEntry)).
    pub fn parse(kind: DynamicsKind, fields: Map<String, Value>) -> Result<Self, String> {
        Ok(Self::checked(kind, (kind.entry().parse_settings)(fields)?))
    }

    fn checked(kind: DynamicsKind, settings: Box<dyn KindSettings>) -> Self {
        let own = (kind.entry().default_settings)();
        assert_eq!(
            settings.as_any().type_id(),
            own.as_any().type_id(),
            "settings of another type than the `{kind}` kind's own ({own:?})"
        );
        KindConfig { kind, settings }
    }

    /// Which kind.
    pub fn kind(&self) -> DynamicsKind {
        self.kind
    }

    /// The settings, when they are a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.settings.as_ref().as_any().downcast_ref()
    }

    /// The settings to change, when they are a `T`.
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.settings.as_mut().as_any_mut().downcast_mut()
    }
}

impl Clone for KindConfig {
    fn clone(&self) -> Self {
        KindConfig { kind: self.kind, settings: self.settings.clone_box() }
    }
}

impl PartialEq for KindConfig {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.settings.same_as(other.settings.as_ref())
    }
}

impl Serialize for KindConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.settings.to_fields();
        let mut map = s.serialize_map(Some(fields.len() + 1))?;
        map.serialize_entry("kind", &self.kind)?;
        for (key, value) in &fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
