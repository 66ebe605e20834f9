//! The public Aptix contracts: AGN-034's request and AGN-004's response envelope.

mod scope;

pub use scope::{ScopeCondition, ScopeOperator};
