//! `wgnnoverlay`: draws every region of interest on the frame, on the GPU:
//! each `GstVideoRegionOfInterestMeta` (as `wgnndetect` and `wgnnclassify`
//! attach them, in DL Streamer's convention: see [`crate::gst::roi`]) as a
//! box in its label's colour (turned by its `rotation`), a label with the
//! confidence and the top class, its keypoints (with COCO's skeleton for 17
//! of them) and its segmentation `mask` as a translucent fill; and
//! `wgnnanalytics`' lines and zones with their counts. The element is glue
//! around
//! [`Overlay`](crate::video::Overlay).
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=320,height=240 ! \
//!     wgnnupload ! wgnnoverlay line-width=3 font-size=16 colors=FF0000,00FF00 ! \
//!     wgnndownload ! videoconvert ! autovideosink
//! ```
//!
//! (with a detector before it, `... ! wgnnupload ! wgnndetect ! wgnnoverlay
//! ! ...`, the boxes show; a frame without ROIs passes as plain RGBA.)
//!
//! `mask-opacity` (0.45; 0: none) sets the masks' fills, `keypoint-threshold`
//! (0.5, as Ultralytics' plots) hides keypoints scored below it and the
//! skeleton's segments to them, `analytics=false` leaves the lines and zones
//! out.
//!
//! Input: any format of [`caps::FORMATS`](crate::gst::caps::FORMATS), in
//! system memory or `memory:WgpuTexture`; output: RGBA at the input size, in
//! the input's memory kind unless downstream only takes the other. Texture
//! memory on both sides moves no frame bytes; system memory costs one
//! counted upload and one counted download per frame. The ROI metas are
//! copied to the output buffer.

mod analytics;
mod imp;
mod items;

use gst::glib;

glib::wrapper! {
    pub struct WgnnOverlay(ObjectSubclass<imp::WgnnOverlay>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}
