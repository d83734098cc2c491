//! Helpers shared by tang's example programs (argument parsing, timing, report tables).
