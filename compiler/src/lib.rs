//! Frontend, pipeline driver and artifacts.
