//! Passes over Ember's IR and the pass manager that runs them by name (`ember opt --passes=a,b`).
