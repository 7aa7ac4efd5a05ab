//! SSD anchors generated as MediaPipe's `SsdAnchorsCalculator` generates
//! them (its non-multiscale path): layers that share a stride are merged, in
//! order, into one grid whose cells hold every merged layer's anchors.

use crate::tasks::model_proc::AnchorOptions;

/// One anchor, relative to the model input (0..1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Anchor {
    pub x_center: f32,
    pub y_center: f32,
    pub w: f32,
    pub h: f32,
}

/// MediaPipe's `CalculateScale`: the scale of layer `index` of `count`,
/// interpolated between `min` and `max`.
fn layer_scale(min: f32, max: f32, index: usize, count: usize) -> f32 {
    if count == 1 {
        (min + max) * 0.5
    } else {
        // MediaPipe computes this in double (its `1.0 *`) and stores a float.
        (f64::from(min) + f64::from(max - min) * index as f64 / (count as f64 - 1.0)) as f32
    }
}

/// Every anchor, in the order the model's outputs list them.
pub(crate) fn generate(o: &AnchorOptions) -> Vec<Anchor> {
    let strides = &o.strides;
    let mut anchors = Vec::new();
    let mut layer = 0;
    while layer < o.num_layers.min(strides.len()) {
        let mut sizes: Vec<(f32, f32)> = Vec::new(); // (width, height)
        let mut last = layer;
        while last < strides.len() && strides[last] == strides[layer] {
            let scale = layer_scale(o.min_scale, o.max_scale, last, strides.len());
            let mut ratios_scales: Vec<(f32, f32)> = Vec::new();
            if last == 0 && o.reduce_boxes_in_lowest_layer {
                ratios_scales.extend([(1.0, 0.1), (2.0, scale), (0.5, scale)]);
            } else {
                ratios_scales.extend(o.aspect_ratios.iter().map(|&r| (r, scale)));
                if o.interpolated_scale_aspect_ratio > 0.0 {
                    let next = if last == strides.len() - 1 {
                        1.0
                    } else {
                        layer_scale(o.min_scale, o.max_scale, last + 1, strides.len())
                    };
                    ratios_scales.push((o.interpolated_scale_aspect_ratio, (scale * next).sqrt()));
                }
            }
            sizes.extend(ratios_scales.iter().map(|&(ratio, scale)| {
                let root = ratio.sqrt();
                (scale * root, scale / root)
            }));
            last += 1;
        }
        let (rows, cols) = grid(o, layer);
        for y in 0..rows {
            for x in 0..cols {
                for &(w, h) in &sizes {
                    let (w, h) = if o.fixed_anchor_size {
                        (1.0, 1.0)
                    } else {
                        (w, h)
                    };
                    anchors.push(Anchor {
                        x_center: (x as f32 + o.anchor_offset_x) / cols as f32,
                        y_center: (y as f32 + o.anchor_offset_y) / rows as f32,
                        w,
                        h,
                    });
                }
            }
        }
        layer = last;
    }
    anchors
}

/// (rows, columns) of layer `layer`'s grid: the feature map size where the
/// options give one, else the input size over the stride, rounded up.
fn grid(o: &AnchorOptions, layer: usize) -> (usize, usize) {
    if let (Some(h), Some(w)) = (
        o.feature_map_height.get(layer),
        o.feature_map_width.get(layer),
    ) {
        return (*h as usize, *w as usize);
    }
    let stride = o.strides[layer].max(1);
    (
        o.input_size_height.div_ceil(stride) as usize,
        o.input_size_width.div_ceil(stride) as usize,
    )
}

/// How many anchors [`generate`] makes, without making them (for checks of
/// options that would make an absurd number).
pub(crate) fn count(o: &AnchorOptions) -> u64 {
    let strides = &o.strides;
    let mut total = 0u64;
    let mut layer = 0;
    while layer < o.num_layers.min(strides.len()) {
        let mut per_cell = 0u64;
        let mut last = layer;
        while last < strides.len() && strides[last] == strides[layer] {
            per_cell += if last == 0 && o.reduce_boxes_in_lowest_layer {
                3
            } else {
                o.aspect_ratios.len() as u64 + u64::from(o.interpolated_scale_aspect_ratio > 0.0)
            };
            last += 1;
        }
        let (rows, cols) = grid(o, layer);
        total = total.saturating_add((rows as u64 * cols as u64).saturating_mul(per_cell));
        layer = last;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MediaPipe's face_detection_short_range options.
    pub(crate) fn short_range() -> AnchorOptions {
        serde_json::from_str(
            r#"{"num_layers": 4, "min_scale": 0.1484375, "max_scale": 0.75,
                "input_size_width": 128, "input_size_height": 128,
                "strides": [8, 16, 16, 16], "fixed_anchor_size": true}"#,
        )
        .unwrap()
    }

    #[test]
    fn face_detection_short_range_has_896_anchors() {
        let o = short_range();
        let a = generate(&o);
        assert_eq!(a.len(), 896);
        assert_eq!(count(&o), 896);
        // Stride 8: a 16x16 grid with two anchors a cell (aspect 1 and the
        // interpolated one), then stride 16 (three merged layers): 8x8 with
        // six a cell.
        let first = Anchor {
            x_center: 0.5 / 16.0,
            y_center: 0.5 / 16.0,
            w: 1.0,
            h: 1.0,
        };
        assert_eq!(a[0], first);
        assert_eq!(a[1], first);
        assert_eq!(a[2].x_center, 1.5 / 16.0);
        assert_eq!(a[511].x_center, 15.5 / 16.0);
        assert_eq!(a[511].y_center, 15.5 / 16.0);
        assert_eq!(a[512].x_center, 0.5 / 8.0);
        assert_eq!(a[517], a[512]);
        assert_eq!(a[518].x_center, 1.5 / 8.0);
        let last = Anchor {
            x_center: 7.5 / 8.0,
            y_center: 7.5 / 8.0,
            w: 1.0,
            h: 1.0,
        };
        assert_eq!(a[895], last);
    }

    #[test]
    fn sizes_follow_scales_and_aspect_ratios() {
        // SSD MobileNet's options from MediaPipe's documentation.
        let o: AnchorOptions = serde_json::from_str(
            r#"{"num_layers": 6, "min_scale": 0.2, "max_scale": 0.95,
                "input_size_width": 300, "input_size_height": 300,
                "strides": [16, 32, 64, 128, 256, 512],
                "aspect_ratios": [1.0, 2.0, 0.5, 3.0, 0.3333],
                "reduce_boxes_in_lowest_layer": true}"#,
        )
        .unwrap();
        let a = generate(&o);
        // 19x19x3 + 10x10x6 + 5x5x6 + 3x3x6 + 2x2x6 + 1x1x6
        assert_eq!(a.len(), 1083 + 600 + 150 + 54 + 24 + 6);
        assert_eq!(count(&o) as usize, a.len());
        // Lowest layer: (1.0, 0.1), (2.0, 0.2), (0.5, 0.2).
        assert!((a[0].w - 0.1).abs() < 1e-7 && (a[0].h - 0.1).abs() < 1e-7);
        assert!((a[1].w - 0.2 * 2f32.sqrt()).abs() < 1e-6);
        assert!((a[1].h - 0.2 / 2f32.sqrt()).abs() < 1e-6);
        assert!((a[2].w - 0.2 / 2f32.sqrt()).abs() < 1e-6);
        assert_eq!(a[0].x_center, 0.5 / 19.0);
        // Second layer, first cell: scale 0.35, then the interpolated
        // sqrt(0.35 * 0.5) at aspect 1.
        let l1 = &a[1083..1089];
        assert!((l1[0].w - 0.35).abs() < 1e-6, "{:?}", l1[0]);
        assert!(
            (l1[5].w - (0.35f32 * 0.5).sqrt()).abs() < 1e-6,
            "{:?}",
            l1[5]
        );
        assert_eq!(l1[0].x_center, 0.5 / 10.0);
        // The last layer's interpolated anchor uses scale 1.
        let end = a[a.len() - 1];
        assert!((end.w - (0.95f32 * 1.0).sqrt()).abs() < 1e-6, "{end:?}");
        assert_eq!((end.x_center, end.y_center), (0.5, 0.5));
    }

    #[test]
    fn feature_map_sizes_replace_strides() {
        let mut o = short_range();
        o.feature_map_width = vec![4, 2, 2, 2];
        o.feature_map_height = vec![3, 1, 1, 1];
        let a = generate(&o);
        assert_eq!(a.len(), 4 * 3 * 2 + 2 * 6);
        assert_eq!(a[2].x_center, 1.5 / 4.0);
        assert_eq!(a[23].y_center, 2.5 / 3.0);
    }
}
