#!/usr/bin/env python3
"""Why wgnn's faces differ from MediaPipe's by a few pixels (not run by CI).

A NumPy replica of MediaPipe's face detection graph (graph.pbtxt: LiteRT on
face_detection_short_range.tflite, the 896 anchors, sigmoid scores >= 0.5,
weighted NMS at IoU 0.3, letterbox removed) fed four ways:
- mp: cv2.warpPerspective as MediaPipe's CPU ImageToTensor does (output pixel
  x samples source pixel x*s): reproduces references.json to 0.00 px;
- ours: bilinear at pixel centres ((x+0.5)*s-0.5), as wgnn's tensorizer does:
  reproduces wgnn's Detector output, 4 to 11 px from MediaPipe's keypoints
  when the letterbox shrinks the frame 4x or more;
- corner: the centre formula shifted to MediaPipe's phase: 0.00 px again;
- area: an antialiased (box) downscale: still 4 to 7 px off.
So the decoder is right and the gap is the tensorizer's sampling phase.
Run from the repository root: python3 tests/data/detect/faces/sampling_phase.py
"""
import numpy as np, json, cv2, sys
from PIL import Image
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path='assets/models/mediapipe/face_detection_short_range.tflite'); it.allocate_tensors()
inp = it.get_input_details()[0]['index']; outs = {d['name']: d['index'] for d in it.get_output_details()}
# anchors
anchors=[]
strides=[8,16,16,16]; layer=0
while layer<4:
    last=layer; n=0
    while last<4 and strides[last]==strides[layer]: n+=2; last+=1
    g=128//strides[layer]
    for y in range(g):
        for x in range(g):
            for _ in range(n): anchors.append(((x+0.5)/g,(y+0.5)/g))
    layer=last
A=np.array(anchors,np.float32)
def run(t):
    it.set_tensor(inp, t[None].astype(np.float32)); it.invoke()
    r=it.get_tensor(outs['regressors'])[0]; c=it.get_tensor(outs['classificators'])[0,:,0]
    s=1/(1+np.exp(-np.clip(c,-80,80)))
    dets=[]
    for i in np.argsort(-s):
        if s[i]<0.5: break
        cx=r[i,0]/128+A[i,0]; cy=r[i,1]/128+A[i,1]; w=r[i,2]/128; h=r[i,3]/128
        kp=[(r[i,4+2*k]/128+A[i,0], r[i,5+2*k]/128+A[i,1]) for k in range(6)]
        dets.append((s[i],[cx-w/2,cy-h/2,cx+w/2,cy+h/2],kp))
    # weighted nms
    out=[]
    def iou(a,b):
        x0=max(a[0],b[0]);y0=max(a[1],b[1]);x1=min(a[2],b[2]);y1=min(a[3],b[3])
        i=max(0,x1-x0)*max(0,y1-y0); u=(a[2]-a[0])*(a[3]-a[1])+(b[2]-b[0])*(b[3]-b[1])-i
        return i/u if u>0 else 0
    rem=dets
    while rem:
        top=rem[0]; grp=[d for d in rem if iou(d[1],top[1])>0.3]; rem=[d for d in rem if iou(d[1],top[1])<=0.3]
        tot=sum(d[0] for d in grp)
        box=[sum(d[1][j]*d[0] for d in grp)/tot for j in range(4)]
        kp=[(sum(d[2][k][0]*d[0] for d in grp)/tot, sum(d[2][k][1]*d[0] for d in grp)/tot) for k in range(6)]
        out.append((top[0],box,kp))
    return out
def mp_input(img):
    h,w=img.shape[:2]; s=max(w,h)
    cx,cy=w/2,h/2
    src=cv2.boxPoints(((cx,cy),(s,s),0)).astype(np.float32)
    dst=np.array([[0,128],[0,0],[128,0],[128,128]],np.float32)
    M=cv2.getPerspectiveTransform(src,dst)
    t=cv2.warpPerspective(img.astype(np.float32),M,(128,128),flags=cv2.INTER_LINEAR,borderMode=cv2.BORDER_CONSTANT,borderValue=0)
    return t/127.5-1, s, (s-w)/2, (s-h)/2
def ours_input(img):
    h,w=img.shape[:2]; s=max(w,h)/128
    cw,ch=w/s,h/s
    t=np.zeros((128,128,3),np.float32)
    ys,xs=np.mgrid[0:128,0:128]+0.5
    qx=xs-(128-cw)/2; qy=ys-(128-ch)/2
    inside=(qx>=0)&(qy>=0)&(qx<cw)&(qy<ch)
    sx=np.clip(qx*s-0.5,0,w-1); sy=np.clip(qy*s-0.5,0,h-1)
    x0=np.floor(sx).astype(int); y0=np.floor(sy).astype(int); x1=np.minimum(x0+1,w-1); y1=np.minimum(y0+1,h-1)
    fx=(sx-x0)[...,None]; fy=(sy-y0)[...,None]; im=img.astype(np.float32)
    v=(im[y0,x0]*(1-fx)+im[y0,x1]*fx)*(1-fy)+(im[y1,x0]*(1-fx)+im[y1,x1]*fx)*fy
    t=np.where(inside[...,None], v, 0.0)
    return t/127.5-1, max(w,h), (max(w,h)-w)/2, (max(w,h)-h)/2
refs=[r for r in json.load(open('tests/data/detect/faces/references.json'))['images'] if r['faces'] and 'band' not in r['image']]
for r in refs:
    img=np.asarray(Image.open(r['image']).convert('RGB'))
    for name,f in [('mp',mp_input),('ours',ours_input)]:
        t,S,ox,oy=f(img)
        d=run(t)
        if not d: print(name,'none'); continue
        sc,b,kp=d[0]
        kp=[(x*S-ox,y*S-oy) for x,y in kp]
        ref=r['faces'][0]['keypoints']
        err=max(np.hypot(a[0]-c[0],a[1]-c[1]) for a,c in zip(kp,ref))
        print(r['image'][-12:],name,f"score {sc:.3f} vs {r['faces'][0]['score']:.3f} box {[round(v*S-o,1) for v,o in zip(b,[ox,oy,ox,oy])]} kp0 {kp[0][0]:.1f},{kp[0][1]:.1f} ref {ref[0][0]:.1f},{ref[0][1]:.1f} maxkp {err:.2f}")
print('--- variants')
def corner_input(img):
    h,w=img.shape[:2]; S=max(w,h); s=S/128
    ox,oy=(S-w)/2,(S-h)/2
    ys,xs=np.mgrid[0:128,0:128].astype(np.float32)
    sx=xs*s-ox; sy=ys*s-oy
    inside=(sx>=0)&(sy>=0)&(sx<=w-1)&(sy<=h-1)
    sx=np.clip(sx,0,w-1); sy=np.clip(sy,0,h-1)
    x0=np.floor(sx).astype(int); y0=np.floor(sy).astype(int); x1=np.minimum(x0+1,w-1); y1=np.minimum(y0+1,h-1)
    fx=(sx-x0)[...,None]; fy=(sy-y0)[...,None]; im=img.astype(np.float32)
    v=(im[y0,x0]*(1-fx)+im[y0,x1]*fx)*(1-fy)+(im[y1,x0]*(1-fx)+im[y1,x1]*fx)*fy
    return np.where(inside[...,None],v,0.0)/127.5-1, S, ox, oy
def area_input(img):
    h,w=img.shape[:2]; S=max(w,h)
    canvas=np.zeros((S,S,3),np.float32); ox,oy=(S-w)//2,(S-h)//2
    canvas[oy:oy+h,ox:ox+w]=img
    t=cv2.resize(canvas,(128,128),interpolation=cv2.INTER_AREA)
    return t/127.5-1, S, ox, oy
for r in refs:
    img=np.asarray(Image.open(r['image']).convert('RGB'))
    for name,f in [('corner',corner_input),('area',area_input)]:
        t,S,ox,oy=f(img)
        d=run(t)
        sc,b,kp=d[0]
        kp=[(x*S-ox,y*S-oy) for x,y in kp]
        ref=r['faces'][0]['keypoints']
        err=max(np.hypot(a[0]-c[0],a[1]-c[1]) for a,c in zip(kp,ref))
        print(r['image'][-12:],name,f"score {sc:.3f} vs {r['faces'][0]['score']:.3f} maxkp {err:.2f}")
