//! plangate's judgement, kept pure: canonical arguments, agreement, and the
//! accept / reject / defer rules of the seed, with no I/O, no clock and no sandbox.
