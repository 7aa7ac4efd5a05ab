//! Helpers for applications that drive pipelines of wgnn elements (the CLIs
//! use them): outputs that never destroy what was there, SIGINT/SIGTERM
//! handling that finalises the file, the device choice, flag values checked
//! where they are parsed, the H.264 encoding tail, and bus errors in words.

mod bus;
mod device;
mod encode;
mod lock;
mod output;
mod pattern;
mod signals;
mod stop;
mod values;

pub use bus::{bus_error_text, model_failure};
pub use device::{choose_device, init_logger, DeviceArg};
pub use encode::{fit_for_encoder, h264_file_tail, Muxer};
pub use output::{same_file, Output};
pub use signals::Interrupts;
pub use stop::stop_after;
pub use values::{parse_background, parse_blur, parse_frames, parse_smoothing, precision_parser};
