//! Code generation targets (cpu, tpu, trainium) behind one interface.
